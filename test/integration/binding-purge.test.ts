// Draining a Binding whose domain still holds data, on a real multi-tenant master: without the
// purge-on-delete annotation nothing is removed and the Binding says why and how to proceed; with it
// the operator removes that domain's objects (no other domain's), then releases the tenant and the
// finalizer. On a store with a disk tier the purge is refused: the master's tenant-scoped removal
// empties the whole tier directory of the members holding the domain's files.

import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import type { KVCachePoolBinding } from '../../src/api/types.ts';
import type { KubeObject } from '../../src/kube/object.ts';
import { binding, externalBackend, pool, v1 } from '../builders/index.ts';
import { ensureNamespace } from '../support/cluster.ts';
import { type IsolatedCluster, startIsolatedCluster } from '../support/isolated-cluster.ts';
import { MooncakeStore } from '../support/mooncake-store.ts';
import { type InProcessOperator, startOperatorInProcess } from '../support/operator.ts';
import { condition, ledgerTenants, tenantMetric, untilBinding } from '../support/pool-waits.ts';
import { afterReconciles } from '../support/reconciles.ts';
import { runStoreClient } from '../support/store-client.ts';
import { waitFor } from '../support/wait.ts';

const MiB = 1 << 20;
const purgeAnnotation = 'kvcache.gpustack.ai/purge-on-delete';
/** A read's lease on the master: short, so objects the test reads are purgeable soon after. */
const leaseMs = 2000;

type Event = KubeObject & { reason?: string; message?: string; type?: string };

const ref = (namespace: string, name: string) => ({
  apiVersion: v1,
  kind: 'KVCachePoolBinding',
  namespace,
  name,
});

/** Writes `count` objects of 1 MiB into a tenant; returns the put return codes. */
async function write(store: MooncakeStore, tenant: string, keys: string[]): Promise<number[]> {
  const results = await runStoreClient(
    { master: store.rpcAddress, host: '127.0.0.1', tenant },
    keys.map((key, i) => ({ op: 'put' as const, key, data: Buffer.alloc(MiB, i + 1) })),
  );
  return results.map((r) => ('rc' in r ? r.rc : Number.NaN));
}

/** Which of a tenant's keys read back with the bytes written (1 = yes). */
async function readable(store: MooncakeStore, tenant: string, keys: string[]): Promise<string> {
  const results = await runStoreClient(
    { master: store.rpcAddress, host: '127.0.0.1', tenant },
    keys.map((key) => ({ op: 'get' as const, key })),
  );
  return results
    .map((r, i) => ('data' in r && r.data.length === MiB && r.data[0] === i + 1 ? '1' : '0'))
    .join('');
}

async function setUp(store: MooncakeStore) {
  const cluster = await startIsolatedCluster();
  for (const ns of ['gpustack-system', 'team-a', 'team-b']) await ensureNamespace(cluster.client, ns);
  const operator = await startOperatorInProcess(cluster.cp.kubeconfigPath, {
    webhooks: true,
    observeIntervalMs: 500,
  });
  await cluster.client.create(externalBackend('mooncake-dram', store));
  await cluster.client.create(pool('shared-dram', { backend: 'mooncake-dram', total: '64Mi' }));
  return { cluster, operator };
}

async function untilRegistered(store: MooncakeStore, tenants: string[]) {
  await waitFor(
    async () => {
      const listed = await ledgerTenants(store);
      return tenants.every((t) => listed.includes(t)) ? true : undefined;
    },
    { what: `tenants ${tenants.join(', ')} in the master's ledger`, timeoutMs: 10_000 },
  );
}

describe('deleting a Binding whose domain holds data (purge-on-delete)', () => {
  let cluster: IsolatedCluster;
  let store: MooncakeStore;
  let operator: InProcessOperator;
  const keys = ['block-1', 'block-2', 'block-3'];
  const eventsAbout = async (namespace: string, name: string) =>
    (
      await cluster.client.list<Event>(
        { apiVersion: 'v1', kind: 'Event', namespace },
        { fieldSelector: `involvedObject.name=${name}` },
      )
    ).items;

  before(async () => {
    store = await MooncakeStore.start({
      members: 2,
      memberBytes: 64 * MiB,
      tenants: [],
      masterArgs: [`--default_kv_lease_ttl=${leaseMs}`],
    });
    ({ cluster, operator } = await setUp(store));
    await cluster.client.create(
      binding('team-a', 'cache', { pool: 'shared-dram', ceiling: '16Mi', domain: 'chat-a' }),
    );
    await cluster.client.create(
      binding('team-b', 'cache', { pool: 'shared-dram', ceiling: '16Mi', domain: 'chat-b' }),
    );
    await untilRegistered(store, ['chat-a', 'chat-b']);
    assert.deepEqual(await write(store, 'chat-a', keys), [0, 0, 0]);
    assert.deepEqual(await write(store, 'chat-b', keys), [0, 0, 0]);
  });
  after(async () => {
    await operator?.stop();
    await store?.stop();
    await cluster?.stop();
  });

  it('keeps the deleted Binding, names the data, the rule and the command, and removes nothing', async () => {
    await cluster.client.delete(ref('team-a', 'cache'));
    const b = await untilBinding(
      cluster.client,
      'team-a',
      'cache',
      'not released because its domain holds data',
      (x) => condition(x, 'Releasable')?.reason === 'LedgerNotReleased',
    );
    assert.equal(b.status?.phase, 'Deleting');
    assert.ok(b.metadata.finalizers?.length, 'the finalizer stays');
    const message = condition(b, 'Releasable')!.message;
    assert.match(message, /^KVCachePoolBinding team-a\/cache is not released: /);
    assert.match(message, /domain chat-a holds 3Mi on the master/);
    assert.match(message, /recomputable/);
    assert.match(
      message,
      /kubectl annotate kvcachepoolbinding cache -n team-a kvcache\.gpustack\.ai\/purge-on-delete=true$/,
    );
    await waitFor(() => eventsAbout('team-a', 'cache'), {
      what: 'a Warning event on the Binding naming the command',
      until: (events) =>
        events.some(
          (e) =>
            e.type === 'Warning' &&
            e.reason === 'KVCacheBindingNotReleased' &&
            e.message?.includes('purge-on-delete=true'),
        ),
      timeoutMs: 10_000,
    });
    // Passes go by: without the annotation nothing of the domain is removed.
    await afterReconciles('kvcachepool', 6);
    assert.equal(await tenantMetric(store, 'charged_bytes', 'chat-a'), 3 * MiB);
    assert.equal(await readable(store, 'chat-a', keys), '111');
    assert.ok((await ledgerTenants(store)).includes('chat-a'));
    assert.ok(await cluster.client.find(ref('team-a', 'cache')), 'the Binding is still there');
  });

  it('with the annotation, removes that domain’s objects only, then releases the tenant and the Binding', async () => {
    // What `kubectl annotate kvcachepoolbinding cache -n team-a kvcache.gpustack.ai/purge-on-delete=true` sends.
    await cluster.client.mergePatch(ref('team-a', 'cache'), {
      metadata: { annotations: { [purgeAnnotation]: 'true' } },
    });
    await waitFor(async () => ((await cluster.client.find(ref('team-a', 'cache'))) ? undefined : true), {
      what: 'the Binding to go',
      timeoutMs: 20_000,
    });
    assert.deepEqual(await ledgerTenants(store), ['chat-b'], 'chat-a released, chat-b kept');
    assert.equal(await readable(store, 'chat-b', keys), '111', 'the other domain’s objects stay');
    assert.equal(await tenantMetric(store, 'charged_bytes', 'chat-b'), 3 * MiB);
    const purged = (await eventsAbout('team-a', 'cache')).find((e) => e.reason === 'KVCacheDomainPurged');
    assert.match(purged?.message ?? '', /removed 3 objects of domain chat-a/);
  });

  it('never purges a Binding that is not being deleted', async () => {
    await cluster.client.mergePatch(ref('team-b', 'cache'), {
      metadata: { annotations: { [purgeAnnotation]: 'true' } },
    });
    await afterReconciles('kvcachepool', 6);
    assert.equal(await readable(store, 'chat-b', keys), '111');
    const b = await cluster.client.get<KVCachePoolBinding>(ref('team-b', 'cache'));
    assert.equal(b.status?.phase, 'Ready');
  });
});

describe('purge-on-delete on a store with a disk tier', () => {
  let cluster: IsolatedCluster;
  let store: MooncakeStore;
  let operator: InProcessOperator;
  const tierFiles = () => readdirSync(store.members[0]!.offloadDir!, { recursive: true }).length;

  before(async () => {
    store = await MooncakeStore.start({
      members: 1,
      memberBytes: 64 * MiB,
      offload: true,
      tenants: [],
      masterArgs: [`--default_kv_lease_ttl=${leaseMs}`],
    });
    ({ cluster, operator } = await setUp(store));
    await cluster.client.create(
      binding('team-a', 'cache', { pool: 'shared-dram', ceiling: '16Mi', domain: 'disk-a' }),
    );
    await cluster.client.create(
      binding('team-b', 'cache', { pool: 'shared-dram', ceiling: '16Mi', domain: 'disk-b' }),
    );
    await untilRegistered(store, ['disk-a', 'disk-b']);
    // Past its ceiling, a domain's older objects are evicted to the tier (once their lease is over).
    for (const batch of [0, 1, 2]) {
      await write(
        store,
        'disk-b',
        Array.from({ length: 12 }, (_, i) => `b-${batch * 12 + i}`),
      );
      await new Promise((r) => setTimeout(r, leaseMs + 1000));
    }
    await write(store, 'disk-a', ['a-1', 'a-2', 'a-3']);
    await waitFor(() => store.metric('master_allocated_file_size_bytes'), {
      what: 'the disk tier to hold files',
      until: (n) => (n ?? 0) > 0,
      timeoutMs: 20_000,
    });
  });
  after(async () => {
    await operator?.stop();
    await store?.stop();
    await cluster?.stop();
  });

  it('refuses the purge, says why, and leaves every object and tier file in place', async () => {
    const files = tierFiles();
    assert.ok(files > 0);
    await cluster.client.mergePatch(ref('team-a', 'cache'), {
      metadata: { annotations: { [purgeAnnotation]: 'true' } },
    });
    await cluster.client.delete(ref('team-a', 'cache'));
    const b = await untilBinding(
      cluster.client,
      'team-a',
      'cache',
      'purge refused on a disk tier',
      (x) => condition(x, 'Releasable')?.reason === 'PurgeUnsafeWithDiskTier',
    );
    assert.match(
      condition(b, 'Releasable')!.message,
      /^KVCachePoolBinding team-a\/cache is not purged: backend mooncake-dram has a disk tier/,
    );
    await afterReconciles('kvcachepool', 6);
    assert.equal(await readable(store, 'disk-a', ['a-1', 'a-2', 'a-3']), '111');
    assert.equal(tierFiles(), files, 'no tier file removed');
    assert.ok((await ledgerTenants(store)).includes('disk-a'));
  });
});
