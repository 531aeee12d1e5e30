// Before a controller deletes children, it confirms against the real apiserver that the parent it
// decided from carries the current spec generation (a cached parent can be older than its children).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { KubeClient, KubeObject } from '../../src/kube/client.ts';
import { intentConfirmation } from '../../src/operator-io/current-intent.ts';
import { externalBackend } from '../builders/index.ts';
import { testClient, uniqueName } from '../support/cluster.ts';

type Backend = KubeObject & {
  spec: { connection: { external: { endpoints: { name: string; address: string }[] } } };
};

describe('intentConfirmation against the real apiserver', () => {
  let client: KubeClient;
  const name = uniqueName('intent');
  const ref = { apiVersion: 'worker.gpustack.ai/v1', kind: 'KVCacheBackend', name };

  before(async () => {
    client = await testClient();
    await client.create(externalBackend(name));
  });
  after(async () => {
    await client?.delete(ref);
    await client?.close();
  });

  it('confirms a parent of the current generation, refuses an older one and a deleted one', async () => {
    const seen = await client.get<Backend>(ref);
    assert.equal(await intentConfirmation(client, seen)(), true);
    // A status write changes the resourceVersion, not the generation: still current.
    await client.mergePatch(ref, { status: { phase: 'Pending' } }, 'status');
    assert.equal(await intentConfirmation(client, seen)(), true);
    const endpoints = structuredClone(seen.spec.connection.external.endpoints);
    endpoints[0]!.address = 'store.example:50052';
    await client.mergePatch(ref, { spec: { connection: { external: { endpoints } } } });
    const confirm = intentConfirmation(client, seen);
    assert.equal(await confirm(), false, 'the spec moved on since this copy');
    await client.delete(ref);
    assert.equal(await confirm(), false, 'asked once per pass: the answer stands');
    assert.equal(await intentConfirmation(client, seen)(), false, 'a deleted parent is not current');
  });
});
