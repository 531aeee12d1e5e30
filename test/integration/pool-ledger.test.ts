// Pools and Bindings on a real multi-tenant master, at the walkthrough's ratios scaled down (1 unit =
// 8 MiB; two 64 MiB members = 16 units): the ledger, the store's own recut, usage, releases, restarts.

import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { KVCachePoolBinding } from '../../src/api/types.ts';
import { parseQuantityBytes } from '../../src/vocabulary/quantity.ts';
import { binding, externalBackend, modelDeployment, pool, v1 } from '../builders/index.ts';
import { ensureNamespace } from '../support/cluster.ts';
import { type IsolatedCluster, startIsolatedCluster } from '../support/isolated-cluster.ts';
import { MooncakeStore } from '../support/mooncake-store.ts';
import { type InProcessOperator, startOperatorInProcess } from '../support/operator.ts';
import { condition, ledgerTenants, tenantMetric, untilBinding, untilPool } from '../support/pool-waits.ts';
import { afterReconciles } from '../support/reconciles.ts';
import { runStoreClient } from '../support/store-client.ts';
import { untilGone, waitFor } from '../support/wait.ts';

const MiB = 1 << 20;
const unit = 8 * MiB;

/** A ModelDeployment in team-a naming a Binding (no replica runs here: there is no kubelet). */
const deploymentOn = (name: string, bindingName: string) =>
  modelDeployment(name, {
    spec: { kvCache: { poolRef: { name: bindingName } } },
    roles: [{ instanceType: 'local' }],
  });

describe('the tenant ledger on a real multi-tenant master (Steps 2 and 6, scaled down)', () => {
  let cluster: IsolatedCluster;
  let store: MooncakeStore;
  let operator: InProcessOperator;
  const write = (tenant: string, keys: string[], size: number) =>
    runStoreClient(
      { master: store.rpcAddress, host: '127.0.0.1', tenant },
      keys.map((key) => ({ op: 'put' as const, key, data: Buffer.alloc(size, key.length) })),
    );

  before(async () => {
    [cluster, store] = await Promise.all([
      startIsolatedCluster(),
      MooncakeStore.start({ members: 2, memberBytes: 64 * MiB, tenants: [] }),
    ]);
    for (const ns of ['gpustack-system', 'team-a', 'team-b']) {
      await ensureNamespace(cluster.client, ns);
    }
    // Every object gets a pass each half second, events or not: the "never" checks count them.
    operator = await startOperatorInProcess(cluster.cp.kubeconfigPath, {
      webhooks: true,
      observeIntervalMs: 500,
    });
    await cluster.client.create(externalBackend('mooncake-dram', store));
    await cluster.client.create(pool('shared-dram', { backend: 'mooncake-dram', total: '128Mi' }));
  });
  after(async () => {
    await operator?.stop();
    await store?.stop();
    await cluster?.stop();
  });

  it('grants the first Binding its ceiling within 2 s, written verbatim to the master', async () => {
    const t0 = performance.now();
    await cluster.client.create(
      binding('team-a', 'team-a', { pool: 'shared-dram', ceiling: '64Mi', domain: null, blockSize: 64 }),
    );
    const b = await untilBinding(
      cluster.client,
      'team-a',
      'team-a',
      'granted',
      (x) => x.status?.effectiveQuota === '64Mi',
      2000,
    );
    console.log(`first grant shown after ${Math.round(performance.now() - t0)} ms`);
    assert.equal(b.spec.domain.name, 'default');
    assert.equal(await tenantMetric(store, 'requested_bytes', 'default'), 64 * MiB);
    assert.equal(condition(b, 'QuotaGranted')?.reason, 'Granted');
    assert.equal(b.status?.phase, 'Ready');
  });

  it('oversubscribes 8:8:4 over 16 units: pool Oversubscribed but Ready, grants recut by the store 6.4:6.4:3.2', async () => {
    await cluster.client.create(
      binding('team-b', 'team-b', { pool: 'shared-dram', ceiling: '64Mi', domain: 'llama-8b-v1' }),
    );
    await cluster.client.create(
      binding('team-a', 'qwen-fp8', {
        pool: 'shared-dram',
        ceiling: '32Mi',
        domain: 'qwen-fp8-v1',
        dtype: 'fp8_e4m3',
      }),
    );
    const p = await untilPool(
      cluster.client,
      'shared-dram',
      'Oversubscribed',
      (x) => condition(x, 'QuotaWithinTotal')?.reason === 'Oversubscribed',
    );
    assert.equal(p.status?.phase, 'Ready', 'oversubscription is informational');
    assert.match(condition(p, 'QuotaWithinTotal')?.message ?? '', /160Mi.*128Mi/);
    // A unit is 8Mi: the printer column reads the recut grant as people write it, not as a byte count.
    const expected: [string, string, string, number, string][] = [
      ['team-a', 'team-a', 'default', 6.4, '51.2Mi'],
      ['team-b', 'team-b', 'llama-8b-v1', 6.4, '51.2Mi'],
      ['team-a', 'qwen-fp8', 'qwen-fp8-v1', 3.2, '25.6Mi'],
    ];
    for (const [ns, name, domain, units, shown] of expected) {
      // The uncontested grant stays on the master until it recuts: wait for the recut figure itself.
      let last: number | undefined;
      const reported = await waitFor(
        async () => {
          last = await tenantMetric(store, 'effective_bytes', domain);
          return last !== undefined && Math.abs(last / unit - units) < 0.01 ? last : undefined;
        },
        {
          what: `${domain} effective of ${units} units`,
          timeoutMs: 5000,
        },
      ).catch((err: unknown) => {
        throw new Error(
          `${domain}: the master grants ${last === undefined ? 'nothing' : `${last / unit} units`}, not ${units}: ${err}`,
        );
      });
      // The Binding showed its earlier, uncontested grant a moment ago: wait for the recut one.
      const b = await untilBinding(
        cluster.client,
        ns,
        name,
        `effectiveQuota ${reported} bytes, as the master reports`,
        (x) =>
          x.status?.effectiveQuota !== undefined &&
          Number(parseQuantityBytes(x.status.effectiveQuota)) === reported,
      );
      assert.notEqual(b.status?.requestedQuota, undefined);
      assert.equal(b.status?.display?.effectiveQuota, shown);
    }
    assert.deepEqual(await ledgerTenants(store), ['default', 'llama-8b-v1', 'qwen-fp8-v1']);
  });

  it('says what gives full grants: raising quota.total clears the note and leaves every grant cut', async () => {
    const within = (x: Parameters<typeof condition>[0]) => condition(x, 'QuotaWithinTotal');
    const cuts = /The master cuts every grant in proportion .*sum to 160Mi and it can allocate 128Mi/;
    await untilPool(cluster.client, 'shared-dram', 'the cut and both figures', (x) =>
      cuts.test(within(x)?.message ?? ''),
    );
    const b = await untilBinding(cluster.client, 'team-a', 'team-a', 'why its grant is cut', (x) =>
      /51\.2Mi of its 64Mi ceiling: .*sum past what it can allocate/.test(
        condition(x, 'QuotaGranted')?.message ?? '',
      ),
    );
    assert.equal(b.status?.display?.effectiveQuota, '51.2Mi');
    const ref = { apiVersion: v1, kind: 'KVCachePool', name: 'shared-dram' };
    await cluster.client.mergePatch(ref, { spec: { quota: { total: '160Mi' } } });
    try {
      const p = await untilPool(
        cluster.client,
        'shared-dram',
        'WithinTotal',
        (x) => within(x)?.reason === 'WithinTotal',
      );
      assert.match(within(p)?.message ?? '', cuts, 'the note is gone, the cut is not');
      const grant = (await tenantMetric(store, 'effective_bytes', 'default'))!;
      assert.ok(Math.abs(grant / unit - 6.4) < 0.01, `the master still grants ${grant / unit} units, not 8`);
    } finally {
      await cluster.client.mergePatch(ref, { spec: { quota: { total: '128Mi' } } });
    }
  });

  it('counts a put under a registered domain in its usage; refuses one under an unregistered domain', async () => {
    const [put] = await write('llama-8b-v1', ['k1'], 1 * MiB);
    assert.deepEqual(put, { rc: 0 });
    const b = await untilBinding(
      cluster.client,
      'team-b',
      'team-b',
      'usage',
      (x) => x.status?.usage !== undefined && x.status.usage !== '0',
    );
    assert.equal(b.status?.usage, '1Mi');
    assert.deepEqual((await write('nobody', ['k1'], 1024))[0], { rc: -1701 }, 'TENANT_NOT_REGISTERED');
  });

  it('keeps usage at or under the grant when a domain writes past it (the store evicts the domain’s own objects)', async () => {
    const results = await write(
      'qwen-fp8-v1',
      Array.from({ length: 10 }, (_, i) => `big-${i}`),
      4 * MiB,
    );
    assert.ok(
      results.every((r) => 'rc' in r && r.rc === 0),
      `every write succeeded: ${JSON.stringify(results)}`,
    );
    const effective = (await tenantMetric(store, 'effective_bytes', 'qwen-fp8-v1'))!;
    const usage = (await tenantMetric(store, 'charged_bytes', 'qwen-fp8-v1'))!;
    assert.ok(usage <= effective && usage > 0, `usage ${usage} within grant ${effective}`);
    const b = await untilBinding(
      cluster.client,
      'team-a',
      'qwen-fp8',
      'usage',
      (x) => x.status?.usage !== undefined && Number(parseQuantityBytes(x.status.usage)) === usage,
    );
    assert.ok(b.status?.overQuota === false);
  });

  it('shows an edited ceiling’s grant within 2 s', async () => {
    const live = await cluster.client.get<KVCachePoolBinding>({
      apiVersion: v1,
      kind: 'KVCachePoolBinding',
      namespace: 'team-a',
      name: 'team-a',
    });
    const t0 = performance.now();
    await cluster.client.replace({ ...live, spec: { ...live.spec, quota: { ceiling: '16Mi' } } });
    await untilBinding(
      cluster.client,
      'team-a',
      'team-a',
      'requested 16Mi',
      (x) => x.status?.requestedQuota === '16Mi',
      2000,
    );
    console.log(`edited grant shown after ${Math.round(performance.now() - t0)} ms`);
  });

  it('holds a Binding in use (HeldByWorkloads) and, once unused, removes its ledger entry before it goes', async () => {
    await cluster.client.create(deploymentOn('qwen-chat', 'team-a'));
    await untilBinding(
      cluster.client,
      'team-a',
      'team-a',
      'usedBy',
      (x) => x.status?.usedBy?.[0]?.name === 'qwen-chat',
    );
    await cluster.client.delete({
      apiVersion: v1,
      kind: 'KVCachePoolBinding',
      namespace: 'team-a',
      name: 'team-a',
    });
    const held = await untilBinding(
      cluster.client,
      'team-a',
      'team-a',
      'held',
      (x) => condition(x, 'Releasable')?.reason === 'HeldByWorkloads',
    );
    assert.equal(held.status?.phase, 'Deleting');
    assert.match(condition(held, 'Releasable')?.message ?? '', /ModelDeployment\/qwen-chat/);
    assert.ok((await ledgerTenants(store)).includes('default'), 'a held Binding keeps its quota');
    await cluster.client.delete({
      apiVersion: v1,
      kind: 'ModelDeployment',
      namespace: 'team-a',
      name: 'qwen-chat',
    });
    await untilGone(
      cluster.client,
      { apiVersion: v1, kind: 'KVCachePoolBinding', namespace: 'team-a', name: 'team-a' },
      { what: 'the Binding to go', timeoutMs: 10_000 },
    );
    assert.ok(!(await ledgerTenants(store)).includes('default'), 'its ledger entry was removed first');
  });

  it('retains the entry of a Binding whose domain still holds data (LedgerNotReleased)', async () => {
    await cluster.client.delete({
      apiVersion: v1,
      kind: 'KVCachePoolBinding',
      namespace: 'team-b',
      name: 'team-b',
    });
    const b = await untilBinding(
      cluster.client,
      'team-b',
      'team-b',
      'not released',
      (x) => condition(x, 'Releasable')?.reason === 'LedgerNotReleased',
    );
    assert.match(condition(b, 'Releasable')?.message ?? '', /llama-8b-v1/);
    assert.ok((await ledgerTenants(store)).includes('llama-8b-v1'));
  });

  it('releases the entries of a pool’s Bindings when the pool and its Bindings are deleted', async () => {
    await cluster.client.create(pool('pool-2', { backend: 'mooncake-dram', total: '32Mi' }));
    await cluster.client.create(binding('team-b', 'b2', { pool: 'pool-2', ceiling: '8Mi', domain: 'd2' }));
    await waitFor(async () => ((await ledgerTenants(store)).includes('d2') ? true : undefined), {
      what: 'd2 registered',
      timeoutMs: 5000,
    });
    await cluster.client.delete({ apiVersion: v1, kind: 'KVCachePool', name: 'pool-2' });
    await untilPool(
      cluster.client,
      'pool-2',
      'held by its Binding',
      (x) => condition(x, 'Releasable')?.reason === 'HeldByBindings',
    );
    await cluster.client.delete({
      apiVersion: v1,
      kind: 'KVCachePoolBinding',
      namespace: 'team-b',
      name: 'b2',
    });
    await untilGone(
      cluster.client,
      { apiVersion: v1, kind: 'KVCachePool', name: 'pool-2' },
      { what: 'pool-2 to go', timeoutMs: 10_000 },
    );
    assert.ok(!(await ledgerTenants(store)).includes('d2'));
  });

  it('goes Error/NothingToAllocate after a master restart and back to Ready once the members remount', async () => {
    await store.stopMaster();
    await store.startMaster();
    const down = await untilPool(
      cluster.client,
      'shared-dram',
      'NothingToAllocate or unreachable',
      (x) => x.status?.phase === 'Error',
      15_000,
    );
    console.log(
      `after restart: ${condition(down, 'CapacityAllocatable')?.reason ?? condition(down, 'QuotaLedgerAvailable')?.reason}`,
    );
    await untilPool(cluster.client, 'shared-dram', 'Ready again', (x) => x.status?.phase === 'Ready', 60_000);
    await untilBinding(
      cluster.client,
      'team-a',
      'qwen-fp8',
      'Ready again',
      (x) => x.status?.phase === 'Ready',
      10_000,
    );
  });

  // Last in this file: it stops the operator's ModelDeployment cache for real, so the cache misses a
  // deployment created from then on — the state a lagging cache is in for a moment, made to last.
  it('never releases a Binding a ModelDeployment names, even one its cache has not seen', async () => {
    await operator.ctx.informers.get({ apiVersion: v1, kind: 'ModelDeployment' }).stop();
    await cluster.client.create(deploymentOn('unseen', 'qwen-fp8'));
    assert.ok((await ledgerTenants(store)).includes('qwen-fp8-v1'));
    await cluster.client.delete({
      apiVersion: v1,
      kind: 'KVCachePoolBinding',
      namespace: 'team-a',
      name: 'qwen-fp8',
    });
    // The deletion wakes a pass at once; every ledger key (this backend's and the unpooled one) is
    // passed again each half second: three rounds of them.
    await afterReconciles('kvcachepool', 6);
    const b = await cluster.client.find<KVCachePoolBinding>({
      apiVersion: v1,
      kind: 'KVCachePoolBinding',
      namespace: 'team-a',
      name: 'qwen-fp8',
    });
    assert.ok(b?.metadata.deletionTimestamp, 'the Binding is held, not released');
    assert.ok((await ledgerTenants(store)).includes('qwen-fp8-v1'), 'and keeps its ledger entry');
  });

  // Stops two more caches for real (Bindings, then pools), so it also runs last.
  it('never lets a pool or a backend go while something its cache has not seen still names it', async () => {
    const find = (kind: string, name: string) => cluster.client.find({ apiVersion: v1, kind, name });
    const taken = (kind: string, name: string) =>
      waitFor(async () => ((await find(kind, name))?.metadata.finalizers?.length ? true : undefined), {
        what: `the operator to take ${kind} ${name}`,
        timeoutMs: 10_000,
      });
    // Two backends of their own, so each check stands alone (no other pool or Binding on them).
    await cluster.client.create(externalBackend('spare-1', store));
    await cluster.client.create(externalBackend('spare-2', store));
    await cluster.client.create(pool('pool-3', { backend: 'spare-1', total: '16Mi' }));
    await taken('KVCacheBackend', 'spare-2');
    await taken('KVCachePool', 'pool-3');
    await operator.ctx.informers.get({ apiVersion: v1, kind: 'KVCachePoolBinding' }).stop();
    await cluster.client.create(binding('team-b', 'b3', { pool: 'pool-3', ceiling: '8Mi', domain: 'd3' }));
    await cluster.client.delete({ apiVersion: v1, kind: 'KVCachePool', name: 'pool-3' });

    await operator.ctx.informers.get({ apiVersion: v1, kind: 'KVCachePool' }).stop();
    await cluster.client.create(pool('pool-4', { backend: 'spare-2', total: '16Mi' }));
    await cluster.client.delete({ apiVersion: v1, kind: 'KVCacheBackend', name: 'spare-2' });
    // Each deletion wakes a pass at once, and every object is passed again each half second: three
    // rounds of the four ledger keys and the three backends.
    await Promise.all([afterReconciles('kvcachepool', 12), afterReconciles('kvcachebackend', 9)]);
    assert.ok((await find('KVCachePool', 'pool-3'))?.metadata.deletionTimestamp, 'pool-3 is held by b3');
    assert.ok(
      (await find('KVCacheBackend', 'spare-2'))?.metadata.deletionTimestamp,
      'spare-2 is held by pool-4',
    );
  });
});
