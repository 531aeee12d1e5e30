// Pool and Binding admission through the real apiserver (KV-cache spec §3.2, §3.3), and a master
// without multi-tenancy: one reuse domain, pools Ready with MultiTenancyDisabled, Bindings Unenforced.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { kubeBinary } from '../../local/toolchain.ts';
import { webhookRequests } from '../../src/kube/metrics.ts';
import type { KubeObject } from '../../src/kube/object.ts';
import { binding, externalBackend, pool } from '../builders/index.ts';
import { ensureNamespace } from '../support/cluster.ts';
import { type IsolatedCluster, startIsolatedCluster } from '../support/isolated-cluster.ts';
import { MooncakeStore } from '../support/mooncake-store.ts';
import { type InProcessOperator, startOperatorInProcess } from '../support/operator.ts';
import { condition, untilBinding, untilPool } from '../support/pool-waits.ts';
import { refusalOf } from '../support/refusal.ts';

const MiB = 1 << 20;

describe('pool and Binding admission, and a master without a tenant ledger', () => {
  let cluster: IsolatedCluster;
  let ledger: MooncakeStore;
  let plain: MooncakeStore;
  let operator: InProcessOperator;

  const refused = async (obj: KubeObject, ...says: string[]) =>
    (await refusalOf(cluster.client.create(obj), ...says)).message;
  /** kubectl apply, returning stderr (where warnings go). */
  const applyWithKubectl = async (obj: KubeObject) => {
    const run = promisify(execFile);
    const child = run(kubeBinary('kubectl'), ['--kubeconfig', cluster.cp.kubeconfigPath, 'apply', '-f', '-']);
    child.child.stdin?.end(JSON.stringify(obj));
    return (await child).stderr;
  };

  before(async () => {
    [cluster, ledger, plain] = await Promise.all([
      startIsolatedCluster(),
      MooncakeStore.start({ members: 1, memberBytes: 64 * MiB, tenants: [] }),
      MooncakeStore.start({ members: 1, memberBytes: 64 * MiB }),
    ]);
    for (const ns of ['gpustack-system', 'ns1', 'ns2']) {
      await ensureNamespace(cluster.client, ns);
    }
    operator = await startOperatorInProcess(cluster.cp.kubeconfigPath, { webhooks: true });
    await cluster.client.create(externalBackend('with-ledger', ledger));
    await cluster.client.create(externalBackend('no-ledger', plain));
    await cluster.client.create(pool('pool-a', { backend: 'with-ledger', total: '64Mi' }));
    await cluster.client.create(pool('pool-a2', { backend: 'with-ledger', total: '64Mi' }));
    await cluster.client.create(pool('pool-off', { backend: 'no-ledger', total: '64Mi' }));
  });
  after(async () => {
    await operator?.stop();
    await ledger?.stop();
    await plain?.stop();
    await cluster?.stop();
  });

  it('refuses a pool naming a backend that does not exist', async () => {
    await refused(
      pool('pool-x', { backend: 'missing', total: '1Gi' }),
      'spec.backends[0]',
      'KVCacheBackend "missing" does not exist',
      'create the backend first',
    );
  });

  it('refuses a domain already claimed on the same master, from any pool on it, in any namespace', async () => {
    await cluster.client.create(binding('ns1', 'b1', { pool: 'pool-a', ceiling: '16Mi', domain: 'shared' }));
    const elsewhere = await refused(
      binding('ns2', 'b2', { pool: 'pool-a2', ceiling: '16Mi', domain: 'shared' }),
      'spec.domain.name',
      'already claimed on this store (backend with-ledger) by another namespace',
      'choose another spec.domain.name',
    );
    assert.doesNotMatch(elsewhere, /ns1|b1/, 'another namespace’s Binding is not named');
    await refused(
      binding('ns1', 'b4', { pool: 'pool-a2', ceiling: '16Mi', domain: 'shared' }),
      'spec.domain.name',
      'already claimed on backend with-ledger by KVCachePoolBinding ns1/b1',
    );
    // another backend: admitted
    await cluster.client.create(
      binding('ns2', 'b3', { pool: 'pool-off', ceiling: '16Mi', domain: 'shared' }),
    );
  });

  it('treats two omitted domain names as one ("default") and refuses the second', async () => {
    await cluster.client.create(binding('ns1', 'd1', { pool: 'pool-a', ceiling: '8Mi', domain: null }));
    await refused(
      binding('ns2', 'd2', { pool: 'pool-a2', ceiling: '8Mi', domain: null }),
      'spec.domain.name',
      'domain "default"',
    );
  });

  it('refuses dtype auto on create, and a ceiling above the pool total', async () => {
    await refused(
      binding('ns1', 'auto', { pool: 'pool-a', ceiling: '8Mi', domain: 'auto-dtype', dtype: 'auto' }),
      'spec.domain.dtype',
      'bfloat16',
    );
    await refused(
      binding('ns1', 'big', { pool: 'pool-a', ceiling: '65Mi', domain: 'big' }),
      'spec.quota.ceiling',
      '64Mi',
      'raise the pool',
    );
  });

  it('is called for a Binding update only when it moves the ceiling, and never for a pool update', async () => {
    /** Reviews the in-process operator has answered on a path. */
    const reviews = async (path: string) =>
      (await webhookRequests.get()).values
        .filter((v) => v.labels.webhook === path)
        .reduce((n, v) => n + v.value, 0);
    const calls = async () => ({
      binding: await reviews('/validate-kvcachepoolbinding'),
      pool: await reviews('/validate-kvcachepool'),
    });
    await cluster.client.create(binding('ns1', 'quiet', { pool: 'pool-a', ceiling: '8Mi', domain: 'quiet' }));
    // The operator's first writes to the new Binding are done: a patch that met one of them would be
    // retried by the apiserver, and each try reviewed again.
    await untilBinding(
      cluster.client,
      'ns1',
      'quiet',
      'granted',
      (x) => condition(x, 'QuotaGranted')?.status === 'True',
    );
    const ref = {
      apiVersion: 'worker.gpustack.ai/v1',
      kind: 'KVCachePoolBinding',
      namespace: 'ns1',
      name: 'quiet',
    };
    const poolRef = { apiVersion: 'worker.gpustack.ai/v1', kind: 'KVCachePool', name: 'pool-a' };
    const start = await calls();
    await cluster.client.mergePatch(ref, { metadata: { labels: { team: 'a' }, annotations: { note: 'x' } } });
    await cluster.client.mergePatch(poolRef, { metadata: { labels: { tier: 'dram' } } });
    assert.deepEqual(await calls(), start, 'a metadata-only update reached a webhook');
    // Moved beyond the pool's total: reviewed and refused; moved within it: reviewed and admitted.
    await refusalOf(
      cluster.client.mergePatch(ref, { spec: { quota: { ceiling: '65Mi' } } }),
      'spec.quota.ceiling',
    );
    await cluster.client.mergePatch(ref, { spec: { quota: { ceiling: 16 * MiB } } });
    const end = await calls();
    // At least once each; the apiserver reviews a patch again when a write met it (a conflict).
    assert.ok(
      end.binding >= start.binding + 2,
      `ceiling moves reviewed ${end.binding - start.binding} times`,
    );
    assert.equal(end.pool, start.pool, 'a Binding update reached the pool webhook');
  });

  it('warns that a second distinct domain on a ledger master needs engines that pass the tenant', async () => {
    const stderr = await applyWithKubectl(
      binding('ns2', 'second', { pool: 'pool-a2', ceiling: '8Mi', domain: 'second' }),
    );
    assert.match(stderr, /Warning: domain "second" is a second reuse domain on backend with-ledger/);
  });

  it('runs a pool on a master without multi-tenancy: Ready with MultiTenancyDisabled; Bindings Unenforced, no EFFECTIVE', async () => {
    const p = await untilPool(
      cluster.client,
      'pool-off',
      'MultiTenancyDisabled',
      (x) => condition(x, 'QuotaLedgerAvailable')?.reason === 'MultiTenancyDisabled',
    );
    assert.equal(p.status?.phase, 'Ready');
    assert.equal(p.status?.usage, undefined);
    const b = await untilBinding(
      cluster.client,
      'ns2',
      'b3',
      'Unenforced',
      (x) => condition(x, 'QuotaGranted')?.reason === 'Unenforced',
    );
    assert.equal(condition(b, 'QuotaGranted')?.status, 'True');
    assert.equal(b.status?.effectiveQuota, undefined, 'no EFFECTIVE figure without a ledger');
    assert.equal(b.status?.usage, undefined);
    assert.equal(b.status?.phase, 'Ready');
  });

  it('refuses a second distinct domain where the master holds no ledger', async () => {
    await refused(
      binding('ns1', 'other', { pool: 'pool-off', ceiling: '8Mi', domain: 'another' }),
      'spec.domain.name',
      'holds no tenant ledger',
      'exactly one reuse domain',
    );
  });

  it('admits a pool on a managed backend without multi-tenancy, with a warning', async () => {
    await cluster.client.create({
      apiVersion: 'worker.gpustack.ai/v1',
      kind: 'KVCacheBackend',
      metadata: { name: 'managed-off' },
      spec: {
        image: 'registry.example.com/kvpool-store:1.0',
        connection: {
          managed: {
            leader: { multiTenancy: false },
            members: [{ nodeSelector: { a: 'b' }, medium: 'DRAM', capacityPerMember: '64Mi' }],
          },
        },
      },
    } as KubeObject);
    const stderr = await applyWithKubectl(
      pool('pool-managed-off', { backend: 'managed-off', total: '64Mi' }),
    );
    assert.match(stderr, /Warning: backend "managed-off" runs without multi-tenancy/);
  });
});
