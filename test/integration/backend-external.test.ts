// An external backend on a real Mooncake master: status reports what the store says, follows it
// within 2 s, and capacity is absent, never zero, when the master cannot be read.

import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { KVCacheBackend } from '../../src/api/types.ts';
import type { KubeObject } from '../../src/kube/object.ts';
import { externalBackend } from '../builders/index.ts';
import { ensureNamespace } from '../support/cluster.ts';
import { type IsolatedCluster, startIsolatedCluster } from '../support/isolated-cluster.ts';
import { MooncakeStore } from '../support/mooncake-store.ts';
import { type InProcessOperator, startOperatorInProcess } from '../support/operator.ts';
import { afterReconciles } from '../support/reconciles.ts';
import { waitFor } from '../support/wait.ts';

const MiB = 1 << 20;
const ref = { apiVersion: 'worker.gpustack.ai/v1', kind: 'KVCacheBackend', name: 'external-store' };

describe('an external backend on a real master with two 64 MiB members', () => {
  let cluster: IsolatedCluster;
  let store: MooncakeStore;
  let operator: InProcessOperator;

  const get = () => cluster.client.get<KVCacheBackend>(ref);
  const until = (what: string, test: (b: KVCacheBackend) => boolean, timeoutMs = 10_000) =>
    waitFor(get, { what, until: test, timeoutMs, intervalMs: 50 });
  const condition = (b: KVCacheBackend, type: string) => b.status?.conditions?.find((c) => c.type === type);

  before(async () => {
    [cluster, store] = await Promise.all([
      startIsolatedCluster(),
      MooncakeStore.start({ members: 2, memberBytes: 64 * MiB, tenants: [] }),
    ]);
    await ensureNamespace(cluster.client, 'gpustack-system');
    // Every object gets a pass each half second, events or not: the idle and held checks count them.
    operator = await startOperatorInProcess(cluster.cp.kubeconfigPath, { observeIntervalMs: 500 });
    await cluster.client.create(externalBackend(ref.name, store));
  });
  after(async () => {
    await operator?.stop();
    await store?.stop();
    await cluster?.stop();
  });

  it('is Ready with the capacity and the members the store reports', async () => {
    const b = await until(
      'Ready with 128Mi',
      (b) => b.status?.phase === 'Ready' && b.status.capacity?.total === '128Mi',
    );
    assert.equal(b.status?.members?.length, 2);
    assert.deepEqual(
      b.status?.members?.map((m) => m.protocol),
      ['tcp', 'tcp'],
    );
    assert.deepEqual(b.status?.endpoints, [
      { name: 'Admin', address: store.adminAddress },
      { name: 'Client', address: store.rpcAddress },
    ]);
    assert.equal(condition(b, 'MembersMounted')?.reason, 'Mounted');
    assert.equal(condition(b, 'LeaderAvailable')?.reason, 'Serving');
    assert.ok(b.metadata.finalizers?.includes('worker.gpustack.ai/kvpool-protection'));
  });

  it('follows a member leaving within 2 s of the store reporting it', async () => {
    await store.stopMember(1);
    await store.waitForCapacity(64 * MiB, 30_000);
    const reported = performance.now();
    await until('capacity 64Mi', (b) => b.status?.capacity?.total === '64Mi', 2000);
    const lag = performance.now() - reported;
    console.log(`status followed the store in ${Math.round(lag)} ms`);
    assert.ok(lag <= 2000);
    assert.equal((await get()).status?.members?.length, 1);
  });

  it('goes Error/LeaderUnreachable with capacity absent when the master stops, and Ready when it returns', async () => {
    await store.stopMaster();
    const down = await until('Error', (b) => b.status?.phase === 'Error');
    assert.equal(condition(down, 'LeaderAvailable')?.reason, 'LeaderUnreachable');
    assert.equal(down.status?.capacity, undefined, 'capacity is absent, not zero');
    assert.equal(condition(down, 'CapacityObserved')?.status, 'False');
    await store.startMaster();
    await store.startMember(1);
    await until(
      'Ready again with 128Mi',
      (b) => b.status?.phase === 'Ready' && b.status.capacity?.total === '128Mi',
      30_000,
    );
  });

  it('makes no API write on an idle pass', async () => {
    const before = (await get()).metadata.resourceVersion;
    // The only backend: each of these passes re-reads the store and decides its status again.
    await afterReconciles('kvcachebackend', 3);
    assert.equal((await get()).metadata.resourceVersion, before);
  });

  it('holds deletion while a pool names it (Deleting, Deletable=False naming the pool), then goes', async () => {
    const pool = { apiVersion: 'worker.gpustack.ai/v1', kind: 'KVCachePool', name: 'uses-external' };
    await cluster.client.create({
      ...pool,
      metadata: { name: pool.name },
      spec: { backends: [ref.name], quota: { total: '64Mi' } },
    } as KubeObject);
    await until('the pool in usedBy', (b) => b.status?.usedBy?.some((u) => u.name === pool.name) === true);
    await cluster.client.delete(ref);
    const held = await until('Deleting', (b) => b.status?.phase === 'Deleting');
    const deletable = condition(held, 'Deletable');
    assert.equal(deletable?.status, 'False');
    assert.match(deletable?.message ?? '', /KVCachePool\/uses-external/);
    assert.match(held.status?.phaseMessage ?? '', /uses-external/);
    await afterReconciles('kvcachebackend', 3);
    assert.ok(await cluster.client.find(ref), 'still held while the pool exists');
    await cluster.client.delete(pool);
    await waitFor(async () => ((await cluster.client.find(ref)) ? undefined : true), {
      what: 'the backend to go',
      timeoutMs: 10_000,
    });
  });
});
