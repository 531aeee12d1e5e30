// What one master's tenant ledger should hold, decided from every pool and Binding on its backend
// (KV-cache spec §5.3, §8): one tenant per Binding at its ceiling, contested domains left alone, and
// deletes only for entries this operator registered.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { KVCachePoolBinding } from '../../src/api/types.ts';
import { type PlanInput, planLedger } from '../../src/controllers/pool/plan.ts';
import type { LedgerEntry } from '../../src/store/tenant-ledger.ts';
import { binding, pool } from '../builders/index.ts';

const gi = (n: number) => BigInt(n) * 2n ** 30n;

const entry = (
  tenant: string,
  requested: bigint | number,
  explicitPolicy: boolean | undefined = true,
): LedgerEntry => ({
  tenant,
  requestedBytes: BigInt(requested),
  explicitPolicy,
});

function plan(over: Partial<PlanInput>) {
  return planLedger({
    pools: [pool()],
    bindings: [],
    isHeld: () => false,
    ledger: [],
    registered: new Set(),
    ...over,
  });
}

const names = (bs: KVCachePoolBinding[]) => bs.map((b) => `${b.metadata.namespace}/${b.metadata.name}`);

describe('planLedger: desired tenants', () => {
  it('asks for one tenant per Binding at its ceiling, never divided', () => {
    const a = binding('team-a', 'qwen', { domain: 'qwen-fp8-v1', ceiling: '8Gi' });
    const b = binding('team-b', 'llama', { domain: 'llama-bf16', ceiling: '600Gi' });
    const p = plan({ bindings: [a, b] });
    assert.deepEqual([...p.desired.keys()].sort(), ['llama-bf16', 'qwen-fp8-v1']);
    assert.equal(p.desired.get('qwen-fp8-v1')!.bytes, 8589934592n);
    assert.equal(p.desired.get('qwen-fp8-v1')!.pool, 'shared-dram');
    assert.equal(p.desired.get('llama-bf16')!.bytes, gi(600));
    assert.deepEqual(p.puts, [
      { tenant: 'llama-bf16', bytes: gi(600) },
      { tenant: 'qwen-fp8-v1', bytes: 8589934592n },
    ]);
  });

  it('reads an omitted domain name as default', () => {
    const p = plan({ bindings: [binding('team-a', 'plain', { domain: null, ceiling: '64Mi' })] });
    assert.deepEqual(p.puts, [{ tenant: 'default', bytes: 67108864n }]);
  });

  it('manages a domain two Bindings claim for neither, and lists both claimants', () => {
    const a = binding('team-a', 'first', { domain: 'shared' });
    const b = binding('team-b', 'second', { domain: 'shared', ceiling: '16Gi' });
    const c = binding('team-c', 'own', { domain: 'own' });
    const p = plan({
      bindings: [a, b, c],
      ledger: [entry('shared', gi(8))],
      registered: new Set(['shared']),
    });
    assert.deepEqual([...p.desired.keys()], ['own']);
    assert.deepEqual(
      p.contested.get('shared')!.map((x) => x.binding),
      [a, b],
    );
    assert.deepEqual(
      p.puts.map((x) => x.tenant),
      ['own'],
    );
    assert.deepEqual(p.deletes, [], 'the contested entry is left as the master has it');
  });

  it('counts an omitted name and an explicit default as the same contested domain', () => {
    const p = plan({
      bindings: [binding('team-a', 'x', { domain: null }), binding('team-b', 'y', { domain: 'default' })],
    });
    assert.equal(p.desired.size, 0);
    assert.equal(p.contested.get('default')?.length, 2);
  });
});

describe('planLedger: deleting Bindings', () => {
  it('releases a deleting Binding no workload holds, and deletes its explicit entry', () => {
    const gone = binding('team-a', 'old', { domain: 'old', deleting: true });
    const live = binding('team-b', 'new', { domain: 'new' });
    const p = plan({
      bindings: [gone, live],
      ledger: [entry('old', gi(8)), entry('new', gi(8))],
      registered: new Set(['old', 'new']),
    });
    assert.deepEqual(names(p.releasing), ['team-a/old']);
    assert.deepEqual(p.held, []);
    assert.deepEqual([...p.desired.keys()], ['new']);
    assert.deepEqual(p.deletes, ['old']);
    assert.deepEqual(p.puts, []);
  });

  it('keeps the claim and quota of a deleting Binding a workload still holds', () => {
    const held = binding('team-a', 'busy', { domain: 'busy', deleting: true, ceiling: '16Gi' });
    const p = plan({
      bindings: [held],
      isHeld: (b) => b === held,
      ledger: [entry('busy', gi(8))],
      registered: new Set(['busy']),
    });
    assert.deepEqual(names(p.held), ['team-a/busy']);
    assert.deepEqual(p.releasing, []);
    assert.deepEqual(p.puts, [{ tenant: 'busy', bytes: gi(16) }]);
    assert.deepEqual(p.deletes, []);
  });

  it('does not delete a releasing domain another live Binding now claims', () => {
    const gone = binding('team-a', 'old', { domain: 'reused', deleting: true });
    const successor = binding('team-b', 'new', { domain: 'reused' });
    const p = plan({
      bindings: [gone, successor],
      ledger: [entry('reused', gi(8))],
      registered: new Set(['reused']),
    });
    assert.deepEqual(names(p.releasing), ['team-a/old']);
    assert.deepEqual(p.deletes, []);
    assert.deepEqual(p.puts, []);
  });
});

describe('planLedger: puts', () => {
  it('writes nothing when every entry already holds the ceiling with an explicit policy', () => {
    const p = plan({
      bindings: [binding('team-a', 'qwen', { domain: 'qwen' })],
      ledger: [entry('qwen', gi(8))],
      registered: new Set(['qwen']),
    });
    assert.deepEqual(p.puts, []);
    assert.deepEqual(p.deletes, []);
  });

  it('puts a tenant whose requested bytes differ from the ceiling', () => {
    const p = plan({
      bindings: [binding('team-a', 'qwen', { domain: 'qwen', ceiling: '12Gi' })],
      ledger: [entry('qwen', gi(8))],
      registered: new Set(['qwen']),
    });
    assert.deepEqual(p.puts, [{ tenant: 'qwen', bytes: gi(12) }]);
  });

  it('puts a tenant the master lists at the right figure but without an explicit policy', () => {
    const p = plan({
      bindings: [binding('team-a', 'qwen', { domain: 'qwen' })],
      ledger: [entry('qwen', gi(8), false)],
      registered: new Set(['qwen']),
    });
    assert.deepEqual(p.puts, [{ tenant: 'qwen', bytes: gi(8) }]);
  });

  it('returns puts sorted by tenant, whatever the Binding order', () => {
    const p = plan({
      bindings: ['zeta', 'alpha', 'mid'].map((d) => binding('team-a', d, { domain: d })),
    });
    assert.deepEqual(
      p.puts.map((x) => x.tenant),
      ['alpha', 'mid', 'zeta'],
    );
  });
});

describe('planLedger: deletes', () => {
  it('deletes registered domains no Binding wants, sorted, only where the policy is explicit', () => {
    const p = plan({
      bindings: [binding('team-a', 'kept', { domain: 'kept' })],
      registered: new Set(['zz-gone', 'kept', 'aa-gone', 'implicit']),
      ledger: [
        entry('kept', gi(8)),
        entry('zz-gone', gi(1)),
        entry('aa-gone', gi(1)),
        entry('implicit', 0, false),
      ],
    });
    assert.deepEqual(p.deletes, ['aa-gone', 'zz-gone']);
  });

  it('never deletes an entry it did not register, nor one the master does not list', () => {
    const p = plan({
      registered: new Set(['registered-but-absent']),
      ledger: [entry('someone-else', gi(4)), entry('default', gi(1))],
    });
    assert.deepEqual(p.deletes, []);
  });

  it('plans no writes at all when the ledger could not be read', () => {
    const p = plan({
      bindings: [binding('team-a', 'qwen', { domain: 'qwen' }), binding('team-b', 'old', { deleting: true })],
      registered: new Set(['stale']),
      ledger: undefined,
    });
    assert.deepEqual(p.puts, []);
    assert.deepEqual(p.deletes, []);
    assert.deepEqual([...p.desired.keys()], ['qwen'], 'desired is still decided (it seeds the policy)');
    assert.deepEqual(names(p.releasing), ['team-b/old']);
  });
});

describe('planLedger: tenants this operator did not register', () => {
  it('leaves a claimed tenant someone else created untouched, and reports it as foreign', () => {
    const mine = binding('team-a', 'mine', { domain: 'theirs', ceiling: '16Gi' });
    const p = plan({ bindings: [mine], ledger: [entry('theirs', gi(4))], registered: new Set() });
    assert.equal(p.foreign.get('theirs')?.binding, mine);
    assert.deepEqual([...p.desired.keys()], []);
    assert.deepEqual(p.puts, [], 'not overwritten');
    assert.deepEqual(p.deletes, []);
  });

  it('never deletes it when the claiming Binding goes', () => {
    const gone = binding('team-a', 'mine', { domain: 'theirs', deleting: true });
    const p = plan({ bindings: [gone], ledger: [entry('theirs', gi(4))], registered: new Set() });
    assert.deepEqual(names(p.releasing), ['team-a/mine']);
    assert.deepEqual(p.deletes, []);
  });

  it('writes a claimed tenant the master does not hold yet, and one it registered before', () => {
    const fresh = binding('team-a', 'fresh', { domain: 'fresh' });
    const known = binding('team-a', 'known', { domain: 'known', ceiling: '12Gi' });
    const p = plan({
      bindings: [fresh, known],
      ledger: [entry('known', gi(8))],
      registered: new Set(['known']),
    });
    assert.deepEqual(p.foreign.size, 0);
    assert.deepEqual(
      p.puts.map((x) => x.tenant),
      ['fresh', 'known'],
    );
  });

  it('does not delete a registered entry whose policy the master does not say is explicit', () => {
    const unsaid: LedgerEntry = { tenant: 'unsaid', requestedBytes: gi(1) };
    const p = plan({ ledger: [unsaid], registered: new Set(['unsaid']) });
    assert.deepEqual(p.deletes, []);
  });
});

describe('planLedger: a ceiling above the pool’s total', () => {
  it('writes nothing for it, and leaves an entry the master has as it is', () => {
    const over = binding('team-a', 'over', { domain: 'over', ceiling: '2000Gi' });
    const fits = binding('team-a', 'fits', { domain: 'fits', ceiling: '8Gi' });
    const p = plan({ bindings: [over, fits], ledger: [entry('over', gi(8))], registered: new Set(['over']) });
    assert.equal(p.overTotal.get('over')?.binding, over);
    assert.equal(p.overTotal.get('over')?.total, gi(900));
    assert.deepEqual(
      p.puts.map((x) => x.tenant),
      ['fits'],
    );
    assert.deepEqual(p.deletes, [], 'not deleted either');
  });
});

describe('planLedger: purging a deleted Binding’s domain (decision 32)', () => {
  const purge = { 'kvcache.gpustack.ai/purge-on-delete': 'true' };
  const registered = new Set(['chat']);
  const ledger = [entry('chat', gi(8))];

  it('purges only a domain being deleted whose Binding carries purge-on-delete: "true"', () => {
    const asked = binding('team-a', 'chat', { domain: 'chat', deleting: true, annotations: purge });
    assert.deepEqual([...plan({ bindings: [asked], ledger, registered }).purges], ['chat']);
    const plain = binding('team-a', 'chat', { domain: 'chat', deleting: true });
    assert.deepEqual([...plan({ bindings: [plain], ledger, registered }).purges], [], 'not asked');
    const other = { 'kvcache.gpustack.ai/purge-on-delete': 'yes' };
    const spelled = binding('team-a', 'chat', { domain: 'chat', deleting: true, annotations: other });
    assert.deepEqual([...plan({ bindings: [spelled], ledger, registered }).purges], [], 'only "true"');
  });

  it('never purges a live Binding, one held by workloads, or before the ledger is listed', () => {
    const live = binding('team-a', 'chat', { domain: 'chat', annotations: purge });
    assert.deepEqual([...plan({ bindings: [live], ledger, registered }).purges], []);
    const held = binding('team-a', 'chat', { domain: 'chat', deleting: true, annotations: purge });
    assert.deepEqual([...plan({ bindings: [held], ledger, registered, isHeld: () => true }).purges], []);
    const asked = binding('team-a', 'chat', { domain: 'chat', deleting: true, annotations: purge });
    assert.deepEqual([...plan({ bindings: [asked], ledger: undefined, registered }).purges], []);
  });

  it('never purges a domain another Binding still claims, nor one a second deleted Binding keeps', () => {
    const asked = binding('team-a', 'chat', { domain: 'chat', deleting: true, annotations: purge });
    const live = binding('team-b', 'chat', { domain: 'chat' });
    assert.deepEqual([...plan({ bindings: [asked, live], ledger, registered }).purges], []);
    const keeps = binding('team-b', 'chat', { domain: 'chat', deleting: true });
    assert.deepEqual([...plan({ bindings: [asked, keeps], ledger, registered }).purges], []);
  });

  it('never purges a tenant this operator did not register', () => {
    const asked = binding('team-a', 'chat', { domain: 'chat', deleting: true, annotations: purge });
    assert.deepEqual([...plan({ bindings: [asked], ledger, registered: new Set() }).purges], []);
  });
});
