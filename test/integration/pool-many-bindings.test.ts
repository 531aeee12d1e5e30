// A pool with 1,500 Bindings on a real multi-tenant master: every tenant is written, every Binding is
// granted, the pool's status stays small enough to write (counts, and bounded lists), and deleting the
// pool with all its Bindings finishes. And a Binding created before its pool is judged against the
// pool's total once the pool exists.

import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { KVCachePool, KVCachePoolBinding } from '../../src/api/types.ts';
import { binding, pool, v1 } from '../builders/index.ts';
import type { IsolatedCluster } from '../support/isolated-cluster.ts';
import type { MooncakeStore } from '../support/mooncake-store.ts';
import type { InProcessOperator } from '../support/operator.ts';
import { startPoolStack, stopPoolStack } from '../support/pool-stack.ts';
import { condition, ledgerTenants, untilBinding, untilPool } from '../support/pool-waits.ts';
import { waitFor } from '../support/wait.ts';

const count = 1500;
const ns = 'many';
const names = Array.from({ length: count }, (_, i) => `d-${String(i).padStart(4, '0')}`);

/** Runs `work` over `items`, at most `width` at a time. */
async function inBatches<T>(items: T[], width: number, work: (item: T) => Promise<unknown>) {
  for (let i = 0; i < items.length; i += width) await Promise.all(items.slice(i, i + width).map(work));
}

describe(`a pool with ${count} Bindings`, () => {
  let cluster: IsolatedCluster;
  let store: MooncakeStore;
  let operator: InProcessOperator;
  const bindings = async () =>
    (
      await cluster.client.list<KVCachePoolBinding>({
        apiVersion: v1,
        kind: 'KVCachePoolBinding',
        namespace: ns,
      })
    ).items;

  before(async () => {
    ({ cluster, store, operator } = await startPoolStack({ namespaces: [ns, 'team-a'] }));
  });
  after(() => stopPoolStack({ operator, store, cluster }));

  it('grants every Binding and keeps the pool status small, with counts', async () => {
    // 1,500 ceilings of 16Ki sum to 24Mi, within the master's 64Mi: every grant is the ceiling.
    await inBatches(names, 25, (name) =>
      cluster.client.create(binding(ns, name, { pool: 'shared-dram', ceiling: '16Ki', domain: name })),
    );
    const p = await untilPool(
      cluster.client,
      'shared-dram',
      `${count} domains counted`,
      (x) => (x.status as { domainCount?: number } | undefined)?.domainCount === count,
      300_000,
    );
    assert.equal(p.status?.phase, 'Ready');
    assert.equal((p.status as { bindingCount?: number }).bindingCount, count);
    assert.ok((p.status?.domains?.length ?? 0) <= 100, 'the domain list is bounded');
    assert.ok((p.status?.usedBy?.length ?? 0) <= 100, 'the Binding list is bounded');
    assert.ok(
      JSON.stringify(p.status).length < 64 << 10,
      `status is ${JSON.stringify(p.status).length} bytes`,
    );
    await waitFor(
      async () => ((await bindings()).every((b) => b.status?.effectiveQuota === '16Ki') ? true : undefined),
      { what: `all ${count} Bindings granted 16Ki`, timeoutMs: 300_000, intervalMs: 2000 },
    );
    assert.equal((await ledgerTenants(store)).length, count);
  });

  it('deletes the pool with all its Bindings, releasing every tenant', async () => {
    await cluster.client.delete({ apiVersion: v1, kind: 'KVCachePool', name: 'shared-dram' });
    // One request marks every Binding deleted; under a full run's load it outlasted the 30 s default.
    await cluster.client.request(
      'DELETE',
      `/apis/worker.gpustack.ai/v1/namespaces/${ns}/kvcachepoolbindings`,
      { timeoutMs: 180_000 },
    );
    await waitFor(
      async () => {
        const left = await bindings();
        const p = await cluster.client.find<KVCachePool>({
          apiVersion: v1,
          kind: 'KVCachePool',
          name: 'shared-dram',
        });
        return left.length === 0 && !p ? true : undefined;
      },
      { what: 'the pool and every Binding gone', timeoutMs: 300_000, intervalMs: 2000 },
    );
    assert.deepEqual(await ledgerTenants(store), []);
  });

  it('judges a Binding created before its pool against the pool’s total once the pool exists', async () => {
    await cluster.client.create(
      binding('team-a', 'early', { pool: 'later', ceiling: '32Mi', domain: 'early' }),
    );
    await cluster.client.create(binding('team-a', 'fits', { pool: 'later', ceiling: '8Mi', domain: 'fits' }));
    await cluster.client.create(pool('later', { backend: 'mooncake-dram', total: '16Mi' }));
    const b = await untilBinding(
      cluster.client,
      'team-a',
      'early',
      'its ceiling judged',
      (x) => condition(x, 'QuotaGranted')?.reason === 'CeilingAboveTotal',
    );
    assert.equal(b.status?.phase, 'Error');
    assert.equal(
      condition(b, 'QuotaGranted')?.message,
      'spec.quota.ceiling 32Mi is more than pool later’s quota.total of 16Mi, so it is not written to the master; lower the ceiling or raise the pool’s total',
    );
    // The other Binding of the same pass was written: the judgement was made with the pool in hand.
    await untilBinding(cluster.client, 'team-a', 'fits', 'Ready', (x) => x.status?.phase === 'Ready');
    assert.deepEqual(await ledgerTenants(store), ['fits']);
    await cluster.client.mergePatch(
      { apiVersion: v1, kind: 'KVCachePoolBinding', namespace: 'team-a', name: 'early' },
      { spec: { quota: { ceiling: '8Mi' } } },
    );
    await untilBinding(
      cluster.client,
      'team-a',
      'early',
      'Ready once it fits',
      (x) => x.status?.phase === 'Ready',
    );
  });
});
