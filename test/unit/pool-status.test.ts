// A pool's conditions, phase and figures, decided from what its master reported this pass (KV-cache
// spec §2.2, §5.3, §8): a pool is Ready only when the master can hold its quotas, and figures are
// absent rather than zero when nothing was read.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { KVCachePool, KVCachePoolBinding } from '../../src/api/types.ts';
import { planLedger } from '../../src/controllers/pool/plan.ts';
import { decidePool, type MasterReport } from '../../src/controllers/pool/status.ts';
import { binding, conditionOf, figures, messageOf, pool, report } from '../builders/index.ts';

function decide(p: KVCachePool, bindings: KVCachePoolBinding[], m: MasterReport = report()) {
  const plan = planLedger({ pools: [p], bindings, isHeld: () => false, ledger: [], registered: new Set() });
  return decidePool(p, bindings, plan, m);
}

const qwen = () => binding('team-a', 'qwen', { domain: 'qwen', ceiling: '600Gi' });
const llama = () => binding('team-b', 'llama', { domain: 'llama', ceiling: '200Gi' });

describe('decidePool: phase', () => {
  it('is Ready when the backend resolves, the ledger is writable and capacity is allocatable', () => {
    const d = decide(pool(), [qwen()]);
    assert.equal(d.phase, 'Ready');
    assert.equal(d.phaseMessage, 'the master holds every quota this pool asked for');
    for (const [type, reason] of [
      ['BackendResolved', 'Resolved'],
      ['QuotaLedgerAvailable', 'Available'],
      ['QuotaPolicyWritable', 'Writable'],
      ['CapacityAllocatable', 'Allocatable'],
      ['QuotaWithinTotal', 'WithinTotal'],
    ]) {
      assert.deepEqual(conditionOf(d, type!), { status: 'True', reason }, type);
    }
    assert.match(messageOf(d, 'CapacityAllocatable'), /900Gi/);
    assert.equal(d.status.clientEndpoint, 'mooncake-dram-leader.gpustack-system.svc:50051');
    assert.deepEqual(d.status.usedBy, [{ kind: 'KVCachePoolBinding', namespace: 'team-a', name: 'qwen' }]);
    assert.equal(conditionOf(d, 'Releasable'), undefined, 'Releasable exists only while deleting');
  });

  it('stays Ready when oversubscribed, and names the ceilings’ sum and the total', () => {
    const d = decide(pool('shared-dram', { total: '700Gi' }), [qwen(), llama()]);
    assert.equal(d.phase, 'Ready');
    assert.deepEqual(conditionOf(d, 'QuotaWithinTotal'), { status: 'False', reason: 'Oversubscribed' });
    assert.match(messageOf(d, 'QuotaWithinTotal'), /sum to 800Gi, past the pool's quota\.total of 700Gi/);
  });

  it('says what gives full grants: the master cuts by what it can allocate, and quota.total plays no part', () => {
    // Step 6: 8Gi + 8Gi + 4Gi on a 16Gi pool of a store whose members hold 16Gi.
    const gi = 2n ** 30n;
    const step6 = [
      binding('team-a', 'team-a', { domain: 'default', ceiling: '8Gi' }),
      binding('team-b', 'team-b', { domain: 'llama-8b-v1', ceiling: '8Gi' }),
      binding('team-a', 'qwen-fp8', { domain: 'qwen-fp8-v1', ceiling: '4Gi' }),
    ];
    const asked = (allocatable: bigint) =>
      report({
        allocatableBytes: allocatable,
        figures: figures({
          default: { requestedBytes: 8n * gi },
          'llama-8b-v1': { requestedBytes: 8n * gi },
          'qwen-fp8-v1': { requestedBytes: 4n * gi },
        }),
      });
    const over = decide(pool('shared-dram', { total: '16Gi' }), step6, asked(16n * gi));
    assert.deepEqual(conditionOf(over, 'QuotaWithinTotal'), { status: 'False', reason: 'Oversubscribed' });
    const said = messageOf(over, 'QuotaWithinTotal');
    assert.match(said, /^the Bindings' ceilings sum to 20Gi, past the pool's quota\.total of 16Gi\. /);
    assert.match(said, /cuts every grant in proportion.*sum to 20Gi and it can allocate 16Gi/);
    assert.match(said, /quota\.total changes no grant/);
    assert.doesNotMatch(said, /raise quota\.total/);
    // Raising quota.total to 20Gi clears the note, not the cut: the message still says so.
    const raised = decide(pool('shared-dram', { total: '20Gi' }), step6, asked(16n * gi));
    assert.deepEqual(conditionOf(raised, 'QuotaWithinTotal'), { status: 'True', reason: 'WithinTotal' });
    assert.match(
      messageOf(raised, 'QuotaWithinTotal'),
      /within the pool's 20Gi\. The master cuts every grant/,
    );
    // A store that can allocate the sum grants every ceiling, whatever quota.total says.
    const roomy = decide(pool('shared-dram', { total: '16Gi' }), step6, asked(32n * gi));
    assert.match(
      messageOf(roomy, 'QuotaWithinTotal'),
      /past the pool's quota\.total of 16Gi\. The master grants every ceiling in full/,
    );
    const fits = decide(pool('shared-dram', { total: '20Gi' }), step6, asked(32n * gi));
    assert.equal(
      messageOf(fits, 'QuotaWithinTotal'),
      "the Bindings' ceilings sum to 20Gi, within the pool's 20Gi",
    );
  });

  it('stays Ready when the master keeps no ledger, saying it serves one reuse domain', () => {
    const d = decide(pool(), [qwen()], report({ ledgerOff: true }));
    assert.equal(d.phase, 'Ready');
    assert.deepEqual(conditionOf(d, 'QuotaLedgerAvailable'), {
      status: 'False',
      reason: 'MultiTenancyDisabled',
    });
    assert.deepEqual(conditionOf(d, 'QuotaPolicyWritable'), {
      status: 'Unknown',
      reason: 'MultiTenancyDisabled',
    });
    assert.match(messageOf(d, 'QuotaLedgerAvailable'), /serves exactly one reuse domain/);
    assert.equal(d.status.usage, undefined, 'no per-domain figures without a ledger');
  });

  it('is Error when a ledger request failed, with the failure in the phase message', () => {
    const d = decide(
      pool(),
      [qwen()],
      report({ ledgerFailure: { kind: 'LedgerUnreachable', message: 'connect ECONNREFUSED 10.0.0.9:9003' } }),
    );
    assert.equal(d.phase, 'Error');
    assert.equal(d.phaseMessage, 'connect ECONNREFUSED 10.0.0.9:9003');
    assert.deepEqual(conditionOf(d, 'QuotaLedgerAvailable'), {
      status: 'False',
      reason: 'LedgerUnreachable',
    });
    assert.deepEqual(conditionOf(d, 'QuotaPolicyWritable'), {
      status: 'Unknown',
      reason: 'LedgerUnreachable',
    });
  });

  it('is Error when the master cannot persist its policy, saying the quota is not in force', () => {
    const d = decide(
      pool(),
      [qwen()],
      report({ ledgerFailure: { kind: 'QuotaPolicyNotWritable', message: 'policy file is read-only' } }),
    );
    assert.equal(d.phase, 'Error');
    assert.deepEqual(conditionOf(d, 'QuotaPolicyWritable'), {
      status: 'False',
      reason: 'QuotaPolicyNotWritable',
    });
    assert.match(d.phaseMessage, /NOT in force/);
  });

  it('is Error when the master has nothing to allocate (members not mounted yet)', () => {
    const d = decide(pool(), [qwen()], report({ allocatableBytes: 0n }));
    assert.equal(d.phase, 'Error');
    assert.deepEqual(conditionOf(d, 'CapacityAllocatable'), { status: 'False', reason: 'NothingToAllocate' });
    assert.match(d.phaseMessage, /nothing to allocate.*not mounted their segments yet/);
  });

  it('is Error with CapacityNotObserved when the master was not scraped', () => {
    for (const m of [report({ figures: undefined }), report({ allocatableBytes: undefined })]) {
      const d = decide(pool(), [qwen()], m);
      assert.equal(d.phase, 'Error');
      assert.deepEqual(conditionOf(d, 'CapacityAllocatable'), {
        status: 'False',
        reason: 'CapacityNotObserved',
      });
    }
  });

  for (const reason of ['BackendNotFound', 'EndpointsNotPublished'] as const) {
    it(`is Error on ${reason}, and judges nothing the master would have said`, () => {
      const message = `backend mooncake-dram: ${reason}`;
      const d = decide(pool(), [qwen()], report({ unresolved: { reason, message }, figures: undefined }));
      assert.equal(d.phase, 'Error');
      assert.equal(d.phaseMessage, message);
      assert.deepEqual(conditionOf(d, 'BackendResolved'), { status: 'False', reason });
      assert.equal(conditionOf(d, 'QuotaLedgerAvailable'), undefined);
      assert.equal(conditionOf(d, 'CapacityAllocatable'), undefined);
      assert.equal(d.status.usage, undefined);
    });
  }
});

describe('decidePool: figures', () => {
  it('sums its own domains’ usage as a binary quantity', () => {
    const m = report({
      figures: figures({
        qwen: { usageBytes: 48n * 2n ** 20n },
        llama: { usageBytes: 16n * 2n ** 20n },
        stranger: { usageBytes: 2n ** 30n },
      }),
    });
    assert.deepEqual(decide(pool(), [qwen(), llama()], m).status.usage, { total: '64Mi' });
  });

  it('keeps a figure that is not a whole binary unit in plain bytes', () => {
    const m = report({ figures: figures({ qwen: { usageBytes: 53687091n } }) });
    assert.deepEqual(decide(pool(), [qwen()], m).status.usage, { total: '53687091' });
  });

  it('reports no usage when none of its domains appears in the scrape, and 0 with no domains', () => {
    const m = report({ figures: figures({ stranger: { usageBytes: 4096n } }) });
    assert.equal(decide(pool(), [qwen()], m).status.usage, undefined);
    assert.deepEqual(decide(pool(), [], m).status.usage, { total: '0' });
    assert.equal(decide(pool(), [], report({ figures: undefined })).status.usage, undefined);
  });

  it('lists its domains sorted, each with its Binding, block size and dtype', () => {
    const d = decide(pool(), [qwen(), llama()]);
    assert.deepEqual(d.status.domains, [
      { name: 'llama', binding: { namespace: 'team-b', name: 'llama' }, blockSize: 16, dtype: 'bfloat16' },
      { name: 'qwen', binding: { namespace: 'team-a', name: 'qwen' }, blockSize: 16, dtype: 'bfloat16' },
    ]);
  });

  it('lists usedBy in namespace/name order, whatever order the Bindings arrive in', () => {
    const zeta = () => binding('team-a', 'zeta', { domain: 'zeta', ceiling: '1Gi' });
    const forward = decide(pool(), [llama(), zeta(), qwen()]);
    const backward = decide(pool(), [qwen(), zeta(), llama()]);
    // An informer's index order follows its events: an unordered list would rewrite the status on an idle pass.
    assert.deepEqual(forward.status, backward.status);
    assert.deepEqual(
      (forward.status.usedBy as { namespace: string; name: string }[]).map((u) => `${u.namespace}/${u.name}`),
      ['team-a/qwen', 'team-a/zeta', 'team-b/llama'],
    );
  });

  it('keeps a domain the master refused to drop, and omits the releasing Binding from usedBy', () => {
    const old = binding('team-a', 'old', { domain: 'old', deleting: true });
    const prior = {
      name: 'old',
      binding: { namespace: 'team-a', name: 'old' },
      blockSize: 32,
      dtype: 'fp8_e4m3',
    };
    const p = pool('shared-dram', { status: { domains: [prior] } });
    const d = decide(p, [old, llama()], report({ retained: new Set(['old']) }));
    assert.deepEqual(
      (d.status.domains as { name: string }[]).map((x) => x.name),
      ['llama', 'old'],
    );
    assert.deepEqual((d.status.domains as unknown[])[1], prior);
    assert.deepEqual(d.status.usedBy, [{ kind: 'KVCachePoolBinding', namespace: 'team-b', name: 'llama' }]);
  });

  it('leaves out the ceilings of releasing Bindings from the oversubscription sum', () => {
    const old = binding('team-a', 'old', { ceiling: '800Gi', deleting: true });
    const d = decide(pool(), [old, llama()]);
    assert.deepEqual(conditionOf(d, 'QuotaWithinTotal'), { status: 'True', reason: 'WithinTotal' });
  });
});

describe('decidePool: deletion', () => {
  it('is held by its Bindings, and names them', () => {
    const d = decide(pool('shared-dram', { deleting: true }), [qwen(), llama()]);
    assert.equal(d.phase, 'Deleting');
    assert.deepEqual(conditionOf(d, 'Releasable'), { status: 'False', reason: 'HeldByBindings' });
    assert.match(d.phaseMessage, /team-a\/qwen, team-b\/llama; delete them first/);
  });

  it('is held by a deleting Binding a workload still uses', () => {
    const p = pool('shared-dram', { deleting: true });
    const held = binding('team-a', 'busy', { deleting: true });
    const plan = planLedger({
      pools: [p],
      bindings: [held],
      isHeld: () => true,
      ledger: [],
      registered: new Set(),
    });
    const d = decidePool(p, [held], plan, report());
    assert.deepEqual(conditionOf(d, 'Releasable'), { status: 'False', reason: 'HeldByBindings' });
  });

  it('is not released while the master refuses to drop a non-empty domain', () => {
    const prior = { name: 'old', binding: { namespace: 'team-a', name: 'old' } };
    const p = pool('shared-dram', { deleting: true, status: { domains: [prior] } });
    const d = decide(p, [], report({ retained: new Set(['old']) }));
    assert.equal(d.phase, 'Deleting');
    assert.deepEqual(conditionOf(d, 'Releasable'), { status: 'False', reason: 'LedgerNotReleased' });
    assert.match(d.phaseMessage, /non-empty domains old; drain them/);
  });

  it('is not released while a ledger request fails', () => {
    const failure = {
      kind: 'LedgerUnreachable' as const,
      message: 'no leader of backend mooncake-dram is ready',
    };
    const d = decide(pool('shared-dram', { deleting: true }), [], report({ ledgerFailure: failure }));
    assert.deepEqual(conditionOf(d, 'Releasable'), { status: 'False', reason: 'LedgerNotReleased' });
    assert.match(d.phaseMessage, /no leader of backend mooncake-dram is ready; retrying/);
  });

  it('is released once nothing holds it, its releasing Bindings included', () => {
    const d = decide(pool('shared-dram', { deleting: true }), [binding('team-a', 'old', { deleting: true })]);
    assert.equal(d.phase, 'Deleting');
    assert.deepEqual(conditionOf(d, 'Releasable'), { status: 'True', reason: 'Released' });
  });
});

describe('decidePool: a pool with many Bindings', () => {
  it('counts every domain and Binding and lists only the first 100 of each, sorted', () => {
    const many = Array.from({ length: 1500 }, (_, i) =>
      binding(`team-${i % 7}`, `b-${String(i).padStart(4, '0')}`, {
        domain: `d-${String(1499 - i).padStart(4, '0')}`,
        ceiling: '16Ki',
      }),
    );
    const d = decide(pool(), many);
    const status = d.status as {
      domainCount: number;
      bindingCount: number;
      domains: { name: string }[];
      usedBy: { namespace: string; name: string }[];
    };
    assert.equal(status.domainCount, 1500);
    assert.equal(status.bindingCount, 1500);
    assert.equal(status.domains.length, 100);
    assert.equal(status.domains[0]!.name, 'd-0000');
    assert.equal(status.domains[99]!.name, 'd-0099');
    assert.equal(status.usedBy.length, 100);
    assert.deepEqual(status.usedBy[0], { kind: 'KVCachePoolBinding', namespace: 'team-0', name: 'b-0000' });
    assert.ok(JSON.stringify(d).length < 64 << 10);
  });
});
