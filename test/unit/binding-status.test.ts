// A KVCachePoolBinding's conditions, phase and figures, written by the pool pass from one scrape of its
// master (KV-cache spec §2.3, §5.2, §5.3, §8): what a tenant is granted, and why it is not.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { UsedByEntry } from '../../src/api/schema.ts';
import type { KVCachePoolBinding } from '../../src/api/types.ts';
import { decideBinding } from '../../src/controllers/pool/binding-status.ts';
import { planLedger } from '../../src/controllers/pool/plan.ts';
import type { MasterReport } from '../../src/controllers/pool/status.ts';
import type { LedgerFailure } from '../../src/store/tenant-ledger.ts';
import { binding, conditionOf, figures, messageOf, pool, report } from './kvcache-builders.ts';

const gi = 2n ** 30n;

function decide(
  b: KVCachePoolBinding,
  m: MasterReport,
  opts: {
    others?: KVCachePoolBinding[];
    usedBy?: UsedByEntry[];
    failure?: LedgerFailure;
    ledger?: Parameters<typeof planLedger>[0]['ledger'];
  } = {},
) {
  const plan = planLedger({
    pools: [pool()],
    bindings: [b, ...(opts.others ?? [])],
    isHeld: () => false,
    ledger: opts.ledger ?? [],
    registered: new Set(),
  });
  return decideBinding(b, plan, m, opts.usedBy ?? [], opts.failure);
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
  it('is Error and names the other claimant of the domain', () => {
    const rival = binding('team-b', 'copycat', { domain: 'qwen' });
    const m = report({ figures: figures({ qwen: { effectiveBytes: gi } }) });
    const d = decide(qwen(), m, { others: [rival] });
    assert.equal(d.phase, 'Error');
    assert.deepEqual(conditionOf(d, 'DomainExclusive'), {
      status: 'False',
      reason: 'DomainClaimedByMultipleBindings',
    });
    assert.match(d.phaseMessage, /domain qwen is also claimed on this master by team-b\/copycat/);
    assert.doesNotMatch(d.phaseMessage, /team-a\/qwen/);
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

  it('is not released while the master refuses to drop the non-empty domain', () => {
    const failure = { kind: 'TenantNotEmpty' as const, message: 'TENANT_NOT_EMPTY' };
    const d = decide(qwen({ deleting: true }), m, { failure });
    assert.deepEqual(conditionOf(d, 'Releasable'), { status: 'False', reason: 'LedgerNotReleased' });
    assert.match(d.phaseMessage, /refuses to drop domain qwen while it holds data; drain it/);
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
