// The API client against the real apiserver: server-side apply is idempotent, status has its own
// field manager, and errors come back typed.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { KubeClient, KubeObject } from '../../src/kube/client.ts';
import { ApiError } from '../../src/kube/errors.ts';
import { apiWrites } from '../../src/kube/metrics.ts';
import { ensureNamespace, testClient, uniqueName } from '../support/cluster.ts';

const v1 = 'worker.gpustack.ai/v1';
const ns = 'runtime-client';

function pool(name: string, total = '16Gi'): KubeObject {
  return {
    apiVersion: v1,
    kind: 'KVCachePool',
    metadata: { name, labels: { 'kvpool.test/owner': 'runtime-client' } },
    spec: { backends: ['b'], quota: { total } },
  } as KubeObject;
}

async function writes(): Promise<number> {
  return (await apiWrites.get()).values.reduce((sum, v) => sum + v.value, 0);
}

describe('KubeClient', () => {
  let client: KubeClient;
  before(async () => {
    client = await testClient();
    await ensureNamespace(client, ns);
  });
  after(() => client.close());

  it('makes no write when the same desired object is applied twice (resourceVersion unchanged)', async () => {
    const name = uniqueName('ssa');
    const first = await client.apply(pool(name), { fieldManager: 'kvpool-controller' });
    const second = await client.apply(pool(name), { fieldManager: 'kvpool-controller' });
    assert.equal(second.metadata.resourceVersion, first.metadata.resourceVersion);
    const third = await client.apply(pool(name, '32Gi'), { fieldManager: 'kvpool-controller' });
    assert.notEqual(
      third.metadata.resourceVersion,
      first.metadata.resourceVersion,
      'a real change is written',
    );
  });

  it('applies status through the status subresource under its own field manager', async () => {
    const name = uniqueName('status');
    await client.apply(pool(name), { fieldManager: 'kvpool-controller' });
    const status = { apiVersion: v1, kind: 'KVCachePool', metadata: { name }, status: { phase: 'Ready' } };
    const a = await client.apply<KubeObject & { status: { phase: string }; spec: unknown }>(status, {
      fieldManager: 'kvpool-controller/status',
      subresource: 'status',
    });
    assert.equal(a.status.phase, 'Ready');
    const b = await client.apply(status, { fieldManager: 'kvpool-controller/status', subresource: 'status' });
    assert.equal(
      b.metadata.resourceVersion,
      a.metadata.resourceVersion,
      'an unchanged status is not written',
    );
    const managers = (a.metadata.managedFields as { manager: string; subresource?: string }[]).map((m) => [
      m.manager,
      m.subresource ?? '',
    ]);
    assert.deepEqual(managers.sort(), [
      ['kvpool-controller', ''],
      ['kvpool-controller/status', 'status'],
    ]);
  });

  it('counts its writes (the figure the idle-resync benchmark reads)', async () => {
    const before = await writes();
    await client.apply(pool(uniqueName('count')), { fieldManager: 'kvpool-controller' });
    assert.equal((await writes()) - before, 1);
  });

  it('types NotFound, Conflict, AlreadyExists and Invalid (with its causes)', async () => {
    const missing = { apiVersion: v1, kind: 'KVCachePool', name: uniqueName('missing') };
    await assert.rejects(client.get(missing), (e: unknown) => e instanceof ApiError && e.isNotFound);
    assert.equal(await client.find(missing), undefined);
    assert.equal(await client.delete(missing), false);

    const name = uniqueName('conflict');
    const created = await client.create(pool(name));
    await assert.rejects(
      client.create(pool(name)),
      (e: unknown) => e instanceof ApiError && e.isAlreadyExists,
    );
    await client.replace({ ...created, spec: { backends: ['b'], quota: { total: '1Gi' } } } as KubeObject);
    await assert.rejects(
      client.replace({ ...created, spec: { backends: ['b'], quota: { total: '2Gi' } } } as KubeObject),
      (e: unknown) => e instanceof ApiError && e.isConflict,
    );

    const err = await client.create(pool(uniqueName('invalid'), '0')).catch((e: unknown) => e);
    assert.ok(err instanceof ApiError && err.isInvalid);
    assert.deepEqual(
      err.causes.map((c) => c.field),
      ['spec.quota.total'],
    );
  });

  it('lists with a label selector and deletes', async () => {
    const name = uniqueName('list');
    await client.apply(pool(name), { fieldManager: 'kvpool-controller' });
    const listed = await client.list(
      { apiVersion: v1, kind: 'KVCachePool' },
      { labelSelector: 'kvpool.test/owner=runtime-client' },
    );
    assert.ok(listed.items.some((p) => p.metadata.name === name));
    assert.equal(await client.delete({ apiVersion: v1, kind: 'KVCachePool', name }), true);
  });
});
