// A pass reads a backend's tenant registry from the cache only at the version this replica last read
// live or wrote: a cached copy that lags its own write would disown the tenant it just registered.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ConfigMap } from 'kubernetes-types/core/v1.js';
import type { KVCacheBackend } from '../../src/api/types.ts';
import { RegistryVersions, registryKey } from '../../src/controllers/pool/tenant-registry.ts';
import type { KubeClient } from '../../src/kube/client.ts';
import type { KubeObject } from '../../src/kube/object.ts';

const backend = {
  apiVersion: 'worker.gpustack.ai/v1',
  kind: 'KVCacheBackend',
  metadata: { name: 'store', uid: 'u-1' },
  spec: {},
} as unknown as KVCacheBackend;

const registry = (version: string, tenants: string): KubeObject<ConfigMap> => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name: 'store-tenant-registry', namespace: 'ns', resourceVersion: version },
  data: { [registryKey]: tenants },
});

/** A client that serves `live` and records every read and apply. */
function fakeClient(live: { object?: KubeObject<ConfigMap>; refuse?: boolean }) {
  const calls: string[] = [];
  const client = {
    async find() {
      calls.push('read');
      return live.object;
    },
    async apply(obj: KubeObject<ConfigMap>) {
      calls.push(`apply@${obj.metadata.resourceVersion ?? 'none'}`);
      if (live.refuse) throw new Error('Conflict: the object has been modified');
      const next = String(Number(live.object?.metadata.resourceVersion ?? '0') + 1);
      live.object = { ...obj, metadata: { ...obj.metadata, resourceVersion: next } };
      return live.object;
    },
  } as unknown as KubeClient;
  return { client, calls };
}

describe('RegistryVersions', () => {
  it('reads live until it knows a version, then takes the cached copy at that version without a request', async () => {
    const live = { object: registry('7', 'a') };
    const { client, calls } = fakeClient(live);
    const versions = new RegistryVersions();
    assert.equal(
      (await versions.current(client, 'ns', 'store', registry('7', 'a')))?.data?.[registryKey],
      'a',
    );
    assert.deepEqual(calls, ['read'], 'nothing known yet: read live');
    assert.equal(
      (await versions.current(client, 'ns', 'store', registry('7', 'a')))?.metadata.resourceVersion,
      '7',
    );
    assert.deepEqual(calls, ['read'], 'the cached copy is the version read: no request');
  });

  it('after its own write, reads live while the cache still holds the older version, and not once it caught up', async () => {
    const live = { object: registry('7', 'a') };
    const { client, calls } = fakeClient(live);
    const versions = new RegistryVersions();
    await versions.current(client, 'ns', 'store', registry('7', 'a'));
    await versions.write(client, backend, 'ns', new Set(['a', 'b']));
    assert.deepEqual(calls, ['read', 'apply@7'], 'the write is conditional on the version known');
    const lagging = await versions.current(client, 'ns', 'store', registry('7', 'a'));
    assert.equal(lagging?.data?.[registryKey], 'a\nb', 'the live copy, with the tenant just registered');
    assert.deepEqual(calls, ['read', 'apply@7', 'read']);
    await versions.current(client, 'ns', 'store', registry('8', 'a\nb'));
    assert.equal(calls.length, 3, 'the cache caught up: no request');
  });

  it('a cached copy at another version (an edit it did not make) is read live', async () => {
    const live = { object: registry('7', 'a') };
    const { client, calls } = fakeClient(live);
    const versions = new RegistryVersions();
    await versions.current(client, 'ns', 'store', registry('7', 'a'));
    live.object = registry('9', 'a\nx');
    const read = await versions.current(client, 'ns', 'store', registry('9', 'a\nx'));
    assert.equal(read?.metadata.resourceVersion, '9');
    assert.deepEqual(calls, ['read', 'read'], 'version 9 is not the one known (7): read live');
  });

  it('a refused write forgets the version, so the next pass reads live', async () => {
    const live = { object: registry('7', 'a'), refuse: true };
    const { client, calls } = fakeClient(live);
    const versions = new RegistryVersions();
    await versions.current(client, 'ns', 'store', registry('7', 'a'));
    await assert.rejects(versions.write(client, backend, 'ns', new Set(['a', 'b'])), /Conflict/);
    await versions.current(client, 'ns', 'store', registry('7', 'a'));
    assert.deepEqual(calls, ['read', 'apply@7', 'read']);
  });

  it('creates the registry unconditionally when none existed', async () => {
    const live: { object?: KubeObject<ConfigMap> } = {};
    const { client, calls } = fakeClient(live);
    const versions = new RegistryVersions();
    assert.equal(await versions.current(client, 'ns', 'store', undefined), undefined);
    await versions.write(client, backend, 'ns', new Set(['a']));
    assert.deepEqual(calls, ['read', 'apply@none']);
    await versions.current(client, 'ns', 'store', live.object);
    assert.equal(calls.length, 2, 'the version it created is known');
  });
});
