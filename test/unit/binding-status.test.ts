// A KVCachePoolBinding's conditions, phase and figures, written by the pool pass from one scrape of its
// master (KV-cache spec §2.3, §5.2, §5.3, §8): what a tenant is granted, and why it is not.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { PoolPrefix } from '../../src/api/pool-prefix.ts';
import type { UsedByEntry } from '../../src/api/schema.ts';
import type { KVCachePoolBinding } from '../../src/api/types.ts';
import { type DrainReport, decideBinding } from '../../src/controllers/pool/binding-status.ts';
import { planLedger } from '../../src/controllers/pool/plan.ts';
import type { MasterReport } from '../../src/controllers/pool/status.ts';
import type { LedgerFailure } from '../../src/store/tenant-ledger.ts';
import { binding, conditionOf, figures, messageOf, pool, report } from '../builders/index.ts';

const gi = 2n ** 30n;

function decide(
  b: KVCachePoolBinding,
  m: MasterReport,
  opts: {
    others?: KVCachePoolBinding[];
    usedBy?: UsedByEntry[];
    poolPrefix?: PoolPrefix;
    failure?: LedgerFailure;
    ledger?: Parameters<typeof planLedger>[0]['ledger'];
    registered?: Set<string>;
    drain?: DrainReport;
  } = {},
) {
  const plan = planLedger({
    pools: [pool()],
    bindings: [b, ...(opts.others ?? [])],
    isHeld: () => false,
    ledger: opts.ledger ?? [],
    registered: opts.registered ?? new Set(),
  });
  const workloads = { usedBy: opts.usedBy ?? [], poolPrefix: opts.poolPrefix };
  return decideBinding(b, plan, m, workloads, opts.failure, opts.drain);
}

const qwen = (over: Parameters<typeof binding>[2] = {}) =>
  binding('team-a', 'qwen', { domain: 'qwen', ceiling: '600Gi', ...over });

describe('decideBinding: grants', () => {
  it('is Ready with the grant, request and usage read from the master', () => {
    const m = report({
      figures: figures({
        qwen: {
          requestedBytes: 600n * gi,
          effectiveBytes: 450n * gi,
          usageBytes: 280n * gi,
          overQuota: false,
        },
      }),
    });
    const d = decide(qwen(), m);
    assert.equal(d.phase, 'Ready');
    assert.deepEqual(conditionOf(d, 'DomainExclusive'), { status: 'True', reason: 'Exclusive' });
    assert.deepEqual(conditionOf(d, 'QuotaObserved'), { status: 'True', reason: 'Observed' });
    assert.deepEqual(conditionOf(d, 'QuotaGranted'), { status: 'True', reason: 'Granted' });
    assert.equal(d.phaseMessage, 'the master grants 450Gi of the 600Gi requested; 280Gi in use');
    assert.deepEqual(d.status, {
      requestedQuota: '600Gi',
      effectiveQuota: '450Gi',
      usage: '280Gi',
      overQuota: false,
    });
  });

  it('says a grant below the ceiling is a cut by what the master can allocate, and what gives the full ceiling', () => {
    const m = report({
      figures: figures({ qwen: { requestedBytes: 8n * gi, effectiveBytes: 6871947674n } }),
    });
    const said = messageOf(decide(qwen({ ceiling: '8Gi' }), m), 'QuotaGranted');
    assert.match(said, /^the master grants domain qwen 6\.4Gi of its 8Gi ceiling: /);
    assert.match(said, /sum past what it can allocate/);
    assert.match(said, /lower ceilings or give the store more member memory/);
    assert.doesNotMatch(said, /quota\.total for full/);
    const full = report({ figures: figures({ qwen: { requestedBytes: 8n * gi, effectiveBytes: 8n * gi } }) });
    assert.equal(
      messageOf(decide(qwen({ ceiling: '8Gi' }), full), 'QuotaGranted'),
      'the master grants domain qwen 8Gi',
    );
  });

  it('formats figures that are not whole binary units as plain bytes', () => {
    const m = report({ figures: figures({ qwen: { effectiveBytes: 67108864n, usageBytes: 53687091n } }) });
    const d = decide(qwen(), m);
    assert.equal(d.status.effectiveQuota, '64Mi');
    assert.equal(d.status.usage, '53687091');
  });

  it('says when usage includes writes still in flight', () => {
    const m = report({
      figures: figures({ qwen: { effectiveBytes: gi, usageBytes: gi, usageIncludesInFlight: true } }),
    });
    assert.match(decide(qwen(), m).phaseMessage, /usage includes writes still in flight/);
  });

  it('is Error with ZeroGranted when the master has nothing to allocate, reporting 0 (not absent)', () => {
    const m = report({
      allocatableBytes: 0n,
      figures: figures({ qwen: { requestedBytes: 600n * gi, effectiveBytes: 0n, usageBytes: 0n } }),
    });
    const d = decide(qwen(), m);
    assert.equal(d.phase, 'Error');
    assert.deepEqual(conditionOf(d, 'QuotaGranted'), { status: 'False', reason: 'ZeroGranted' });
    assert.match(d.phaseMessage, /CapacityAllocatable/);
    assert.equal(d.status.effectiveQuota, '0');
    assert.equal(d.status.usage, '0');
  });

  it('is Error with GrantNotExported when the master lists the tenant but no effective figure', () => {
    const d = decide(qwen(), report({ figures: figures({ qwen: { requestedBytes: 600n * gi } }) }));
    assert.equal(d.phase, 'Error');
    assert.deepEqual(conditionOf(d, 'QuotaGranted'), { status: 'False', reason: 'GrantNotExported' });
    assert.equal(d.status.effectiveQuota, undefined);
    assert.equal(d.status.requestedQuota, '600Gi');
  });

  it('is Error while the master has no entry for the domain, with figures cleared', () => {
    const stale = qwen({ status: { effectiveQuota: '450Gi', usage: '1Gi' } });
    const d = decide(stale, report({ figures: figures({ other: { effectiveBytes: gi } }) }));
    assert.equal(d.phase, 'Error');
    assert.deepEqual(conditionOf(d, 'QuotaObserved'), { status: 'True', reason: 'TenantNotInLedger' });
    assert.deepEqual(conditionOf(d, 'QuotaGranted'), { status: 'False', reason: 'NoLedgerEntry' });
    assert.match(d.phaseMessage, /domain qwen is not in the master’s ledger yet/);
    assert.deepEqual(d.status, {});
  });

  it('is Ready and Unenforced without multi-tenancy, with no effective quota or usage', () => {
    const d = decide(qwen(), report({ ledgerOff: true, figures: figures({ qwen: { usageBytes: gi } }) }));
    assert.equal(d.phase, 'Ready');
    assert.deepEqual(conditionOf(d, 'QuotaGranted'), { status: 'True', reason: 'Unenforced' });
    assert.equal(d.status.effectiveQuota, undefined);
    assert.equal(d.status.usage, undefined);
  });
});

describe('decideBinding: the master not read', () => {
  const previous = { requestedQuota: '600Gi', effectiveQuota: '450Gi', usage: '280Gi', overQuota: false };

  for (const reason of ['BackendNotFound', 'EndpointsNotPublished'] as const) {
    it(`keeps the previous figures when the backend is unresolved (${reason})`, () => {
      const message = `backend mooncake-dram: ${reason}`;
      const m = report({ unresolved: { reason, message }, figures: undefined });
      const d = decide(qwen({ status: { phase: 'Ready', ...previous } }), m);
      assert.equal(d.phase, 'Error');
      assert.equal(d.phaseMessage, message);
      assert.deepEqual(conditionOf(d, 'QuotaObserved'), { status: 'False', reason: 'MasterNotScraped' });
      assert.deepEqual(d.status, previous);
    });
  }

  it('keeps the previous figures when the scrape failed, naming the ledger failure', () => {
    const m = report({
      figures: undefined,
      ledgerFailure: { kind: 'LedgerUnreachable', message: 'timeout' },
    });
    const d = decide(qwen({ status: previous }), m);
    assert.deepEqual(conditionOf(d, 'QuotaObserved'), { status: 'False', reason: 'MasterNotScraped' });
    assert.equal(messageOf(d, 'QuotaObserved'), 'timeout');
    assert.deepEqual(d.status, previous);
  });
});

describe('decideBinding: contested domain', () => {
  const m = report({ figures: figures({ qwen: { effectiveBytes: gi } }) });

  it('is Error and names the other claimant of the domain in its own namespace', () => {
    const rival = binding('team-a', 'copycat', { domain: 'qwen' });
    const d = decide(qwen(), m, { others: [rival] });
    assert.equal(d.phase, 'Error');
    assert.deepEqual(conditionOf(d, 'DomainExclusive'), {
      status: 'False',
      reason: 'DomainClaimedByMultipleBindings',
    });
    assert.match(
      d.phaseMessage,
      /domain qwen is also claimed on this master by team-a\/copycat; .*delete one of them/,
    );
    assert.doesNotMatch(d.phaseMessage, /team-a\/qwen/);
  });

  it('does not name a claimant in another namespace, only counts it, and says how to get out', () => {
    const rivals = [
      binding('team-b', 'copycat', { domain: 'qwen' }),
      binding('team-a', 'twin', { domain: 'qwen' }),
    ];
    const d = decide(qwen(), m, { others: rivals });
    assert.equal(messageOf(d, 'DomainExclusive'), d.phaseMessage);
    assert.match(
      d.phaseMessage,
      /^domain qwen is also claimed on this master by team-a\/twin and 1 Binding in another namespace; .*create one with another spec\.domain\.name/,
    );
    assert.doesNotMatch(d.phaseMessage, /team-b|copycat/);
  });
});

describe('decideBinding: deletion', () => {
  const m = report({ figures: figures({ qwen: { effectiveBytes: gi } }) });

  it('is held by the workloads that use it, and names them', () => {
    const usedBy = [
      { kind: 'ModelDeployment', namespace: '', name: 'chat' },
      { kind: 'ModelDeployment', namespace: '', name: 'batch' },
    ];
    const d = decide(qwen({ deleting: true }), m, { usedBy });
    assert.equal(d.phase, 'Deleting');
    assert.deepEqual(conditionOf(d, 'Releasable'), { status: 'False', reason: 'HeldByWorkloads' });
    assert.match(d.phaseMessage, /ModelDeployment\/chat, ModelDeployment\/batch; delete them first/);
    assert.deepEqual(d.status.usedBy, usedBy);
    assert.equal(d.status.effectiveQuota, '1Gi', 'a held Binding still receives its figures');
  });

  it('is not released while its domain holds data, and names the data, the rule and the command', () => {
    const failure = { kind: 'TenantNotEmpty' as const, message: 'TENANT_NOT_EMPTY' };
    const held = report({ figures: figures({ qwen: { effectiveBytes: gi, usageBytes: 3n * 2n ** 20n } }) });
    const d = decide(qwen({ deleting: true }), held, { failure });
    assert.deepEqual(conditionOf(d, 'Releasable'), { status: 'False', reason: 'LedgerNotReleased' });
    assert.equal(
      d.phaseMessage,
      "KVCachePoolBinding team-a/qwen is not released: domain qwen holds 3Mi on the master (its charged memory; the master counts no objects per domain); the master refuses to drop a domain that holds data, and deleting the Binding drops this domain's cached KV: recomputable, but its engines pay the prefill again. To remove that data and finish the deletion: kubectl annotate kvcachepoolbinding qwen -n team-a kvcache.gpustack.ai/purge-on-delete=true",
    );
  });

  it('says a domain holding no charged memory keeps copies on a disk tier', () => {
    const failure = { kind: 'TenantNotEmpty' as const, message: 'TENANT_NOT_EMPTY' };
    const empty = report({ figures: figures({ qwen: { effectiveBytes: gi, usageBytes: 0n } }) });
    const d = decide(qwen({ deleting: true }), empty, { failure });
    assert.match(d.phaseMessage, /domain qwen holds objects the master charges no memory for/);
  });

  it('says the release request failed when its outcome is unknown', () => {
    const failure = { kind: 'LedgerUnreachable' as const, message: 'connect ECONNREFUSED' };
    const d = decide(qwen({ deleting: true }), m, { failure });
    assert.deepEqual(conditionOf(d, 'Releasable'), { status: 'False', reason: 'LedgerRequestFailed' });
    assert.match(
      d.phaseMessage,
      /removing domain qwen from the ledger failed: connect ECONNREFUSED; retrying/,
    );
  });
});

describe('decideBinding: purge-on-delete (decision 32)', () => {
  const failure = { kind: 'TenantNotEmpty' as const, message: 'TENANT_NOT_EMPTY' };
  const asked = (over: Parameters<typeof binding>[2] = {}) =>
    qwen({ deleting: true, annotations: { 'kvcache.gpustack.ai/purge-on-delete': 'true' }, ...over });
  const m = report({ figures: figures({ qwen: { effectiveBytes: gi, usageBytes: 2n ** 20n } }) });
  const registered = new Set(['qwen']);
  const ledger = [{ tenant: 'qwen', requestedBytes: 600n * gi, explicitPolicy: true }];

  it('is Purging while objects in their lease are left, saying how many were removed', () => {
    const d = decide(asked(), m, { failure, registered, ledger, drain: { backend: 'dram', purged: 5 } });
    assert.deepEqual(conditionOf(d, 'Releasable'), { status: 'False', reason: 'Purging' });
    assert.match(
      d.phaseMessage,
      /^KVCachePoolBinding team-a\/qwen is being purged \(kvcache.gpustack.ai\/purge-on-delete\): the master removed 5 objects this pass, and domain qwen holds 1Mi on the master .*removed once it ends; retrying$/,
    );
  });

  it('is not purged on a store with a disk tier, and names the manual way out and what it leaves', () => {
    const drain = { backend: 'dram', refusedBy: 'a member group declares localDisks' };
    const d = decide(asked(), m, { failure, registered, ledger, drain });
    assert.deepEqual(conditionOf(d, 'Releasable'), { status: 'False', reason: 'PurgeUnsafeWithDiskTier' });
    assert.match(
      d.phaseMessage,
      /^KVCachePoolBinding team-a\/qwen is not purged: backend dram has a disk tier \(a member group declares localDisks\), .*other domains' files included; .*kubectl patch kvcachepoolbinding qwen -n team-a --type=merge -p '\{"metadata":\{"finalizers":null\}\}'/,
    );
  });

  it('waits for every deleted Binding of the domain to ask before purging', () => {
    const keeps = binding('team-b', 'qwen', { domain: 'qwen', deleting: true });
    const d = decide(asked(), m, { failure, registered, ledger, others: [keeps] });
    assert.deepEqual(conditionOf(d, 'Releasable'), { status: 'False', reason: 'LedgerNotReleased' });
    assert.match(
      d.phaseMessage,
      /The purge it asks for waits until every Binding of domain qwen being deleted carries kvcache.gpustack.ai\/purge-on-delete=true$/,
    );
  });
});

describe('decideBinding: a tenant someone else registered', () => {
  it('is Error with TenantExistsOnMaster, and publishes none of that tenant’s figures', () => {
    const m = report({
      figures: figures({ qwen: { requestedBytes: 4n * gi, effectiveBytes: 4n * gi, usageBytes: gi } }),
    });
    const d = decide(qwen(), m, {
      ledger: [{ tenant: 'qwen', requestedBytes: 4n * gi, explicitPolicy: true }],
    });
    assert.equal(d.phase, 'Error');
    assert.deepEqual(conditionOf(d, 'DomainExclusive'), { status: 'False', reason: 'TenantExistsOnMaster' });
    assert.match(
      d.phaseMessage,
      /^the master already holds tenant qwen, which kvpool did not register: it is left untouched .*use another domain\.name/,
    );
    assert.deepEqual(conditionOf(d, 'QuotaGranted'), { status: 'False', reason: 'TenantExistsOnMaster' });
    assert.deepEqual(d.status, {});
  });
});

describe('decideBinding: its own ledger write failed', () => {
  const failed = new Map([['qwen', { kind: 'LedgerUnreachable' as const, message: 'PUT: HTTP 500' }]]);

  it('is Error with LedgerRequestFailed, the figures still published', () => {
    const m = report({
      putFailures: failed,
      figures: figures({ qwen: { requestedBytes: 8n * gi, effectiveBytes: 8n * gi, usageBytes: 0n } }),
    });
    const d = decide(qwen(), m);
    assert.equal(d.phase, 'Error');
    assert.deepEqual(conditionOf(d, 'QuotaGranted'), { status: 'False', reason: 'LedgerRequestFailed' });
    assert.equal(
      messageOf(d, 'QuotaGranted'),
      "writing domain qwen's ceiling (600Gi) to the master failed: PUT: HTTP 500; retrying",
    );
    assert.equal(d.status.effectiveQuota, '8Gi');
  });

  it('says so rather than NoLedgerEntry when the tenant was never written', () => {
    const d = decide(qwen(), report({ putFailures: failed }));
    assert.deepEqual(conditionOf(d, 'QuotaGranted'), { status: 'False', reason: 'LedgerRequestFailed' });
  });

  it('leaves the other Bindings as they are', () => {
    const other = binding('team-b', 'llama', { domain: 'llama' });
    const m = report({ putFailures: failed, figures: figures({ llama: { effectiveBytes: gi } }) });
    assert.equal(decide(other, m).phase, 'Ready');
  });
});

describe('decideBinding: a ceiling above its pool’s total', () => {
  it('is Error with CeilingAboveTotal, naming both figures', () => {
    const d = decide(qwen({ ceiling: '1000Gi' }), report());
    assert.equal(d.phase, 'Error');
    assert.deepEqual(conditionOf(d, 'QuotaGranted'), { status: 'False', reason: 'CeilingAboveTotal' });
    assert.equal(
      messageOf(d, 'QuotaGranted'),
      'spec.quota.ceiling 1000Gi is more than pool shared-dram’s quota.total of 900Gi, so it is not written to the master; lower the ceiling or raise the pool’s total',
    );
  });
});

describe('decideBinding: prompt tokens served from the pool', () => {
  const served = { hitTokens: 4096, queriedTokens: 8192, hitRatio: '0.5' };

  it('publishes what its ModelDeployments’ engines counted, even when the master was not read', () => {
    for (const m of [
      report(),
      report({ figures: undefined, unresolved: { reason: 'EndpointsNotPublished', message: 'down' } }),
    ])
      assert.deepEqual(decide(qwen(), m, { poolPrefix: served }).status.poolPrefix, served);
  });

  it('publishes nothing when none reported (absent, not zero)', () => {
    assert.equal(decide(qwen(), report()).status.poolPrefix, undefined);
  });
});
