// The KVCacheBackend refusals the schema cannot judge, served by the operator's validating webhook and
// met through the real apiserver: each message names the field, the rule and the fix.

import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { admissionNotInForce } from '../../local/admission-in-force.ts';
import type { KVCacheBackend } from '../../src/api/types.ts';
import { ApiError } from '../../src/kube/errors.ts';
import type { KubeObject } from '../../src/kube/object.ts';
import { ensureNamespace } from '../support/cluster.ts';
import { type IsolatedCluster, startIsolatedCluster } from '../support/isolated-cluster.ts';
import { type InProcessOperator, startOperatorInProcess } from '../support/operator.ts';
import { waitFor } from '../support/wait.ts';

type Spec = Record<string, unknown>;
const v1 = 'worker.gpustack.ai/v1';
const group = (extra: Spec = {}) => ({
  nodeSelector: { 'kubernetes.io/os': 'linux' },
  medium: 'DRAM',
  capacityPerMember: '8Gi',
  ...extra,
});
const backend = (name: string, managed: Spec = {}, spec: Spec = {}): KubeObject =>
  ({
    apiVersion: v1,
    kind: 'KVCacheBackend',
    metadata: { name },
    spec: { connection: { managed: { leader: {}, members: [group()], ...managed } }, ...spec },
  }) as KubeObject;

describe('KVCacheBackend admission through the real apiserver', () => {
  let cluster: IsolatedCluster;
  let operator: InProcessOperator;
  let n = 0;

  const refused = async (obj: KubeObject, ...says: string[]) => {
    const err = await cluster.client.create(obj).then(
      () => assert.fail('the apiserver admitted it'),
      (e: unknown) => e,
    );
    assert.ok(err instanceof ApiError, String(err));
    assert.match(err.message, /admission webhook "kvcachebackends\.worker\.gpustack\.ai" denied the request/);
    for (const s of says) assert.ok(err.message.includes(s), `message lacks "${s}": ${err.message}`);
  };
  // The controller writes finalizers and status meanwhile: an edit retries on a resourceVersion conflict.
  const replaceWith = async (name: string, edit: (b: KVCacheBackend) => void) => {
    for (;;) {
      const live = await cluster.client.get<KVCacheBackend>({ apiVersion: v1, kind: 'KVCacheBackend', name });
      edit(live);
      try {
        return await cluster.client.replace(live);
      } catch (e) {
        if (!(e instanceof ApiError && e.isConflict)) throw e;
      }
    }
  };
  const editRefused = async (name: string, edit: (b: KVCacheBackend) => void, ...says: string[]) => {
    const err = await replaceWith(name, edit).then(
      () => assert.fail('the apiserver admitted the edit'),
      (e: unknown) => e,
    );
    assert.ok(err instanceof ApiError, String(err));
    for (const s of says) assert.ok(err.message.includes(s), `message lacks "${s}": ${err.message}`);
  };
  const fresh = () => `b${++n}`;
  let notInForceBefore: string[] = [];

  before(async () => {
    cluster = await startIsolatedCluster();
    await ensureNamespace(cluster.client, 'gpustack-system');
    notInForceBefore = await admissionNotInForce(cluster.client);
    operator = await startOperatorInProcess(cluster.cp.kubeconfigPath, { webhooks: true });
  });
  after(async () => {
    await operator?.stop();
    await cluster?.stop();
  });

  it('tells when the apiserver calls the webhooks: neither before the operator, both once it is up', async () => {
    assert.deepEqual(notInForceBefore, ['validating', 'mutating']);
    assert.deepEqual(await admissionNotInForce(cluster.client), []);
    const probes = await cluster.client.list({ apiVersion: v1, kind: 'KVCacheBackend' });
    assert.deepEqual(probes.items, [], 'the probes are dry runs: nothing is stored');
  });

  it('refuses leader extraArgs the operator derives or that break the store, one reason each', async () => {
    for (const [arg, says] of [
      ['-rpc_port=50052', 'derived'],
      ['--metrics_port=9100', 'derived'],
      ['-port=50052', 'deprecated'],
      ['-rpc_address=0.0.0.0', 'Pod IP'],
      ['-enable_snapshot=true', 'snapshot'],
      ['-snapshot_interval_seconds=60', 'snapshot'],
      ['-enable_oplog=true', 'etcd'],
      ['-etcd_endpoints=http://e:2379', 'etcd'],
      ['-enable_cxl=true', 'CXL'],
      ['-memory_allocator=cachelib', 'memory_allocator'],
      ['rpc_port', 'spec.connection.managed.leader.extraArgs[0]'],
    ] as const) {
      await refused(
        backend(fresh(), { leader: { extraArgs: [arg] } }),
        'spec.connection.managed.leader.extraArgs[0]',
        says,
      );
    }
    await cluster.client.create(
      backend(fresh(), { leader: { extraArgs: ['-default_kv_lease_ttl=30s', '-metrics_host=0.0.0.0'] } }),
    );
  });

  it('refuses environment names the operator renders', async () => {
    await refused(
      backend(fresh(), { leader: { extraEnv: [{ name: 'KUBERNETES_POD_IP', value: 'x' }] } }),
      'spec.connection.managed.leader.extraEnv[0]',
      'KUBERNETES_POD_IP',
    );
    await refused(
      backend(fresh(), { members: [group({ extraEnv: [{ name: 'MC_TE_METRIC', value: '0' }] })] }),
      'spec.connection.managed.members[0].extraEnv[0]',
      'MC_TE_METRIC',
    );
    await refused(
      backend(fresh(), {
        members: [group({ extraEnv: [{ name: 'MOONCAKE_OFFLOAD_BUCKET_KEYS_LIMIT', value: '1' }] })],
      }),
      'MOONCAKE_OFFLOAD_BUCKET_KEYS_LIMIT',
    );
    await refused(
      backend(fresh(), { members: [group({ extraArgs: ['-global_segment_size=1'] })] }),
      'spec.connection.managed.members[0].extraArgs[0]',
      'capacityPerMember',
    );
  });

  it('refuses a bad image reference, a bad node selector and a name too long for the rendered objects', async () => {
    await refused(backend(fresh(), {}, { image: 'Registry/Store:1.0' }), 'spec.image');
    await refused(
      backend(fresh(), { members: [group({ image: 'store::1' })] }),
      'spec.connection.managed.members[0].image',
    );
    await refused(
      backend(fresh(), { members: [group({ nodeSelector: { 'bad key!': 'x' } })] }),
      'spec.connection.managed.members[0].nodeSelector',
    );
    await refused(backend('a'.repeat(44)), 'metadata.name');
  });

  it('refuses a backend with no image when the kv-cache-backend-image Setting is blank, naming both', async () => {
    const setting = {
      apiVersion: 'gpustack.ai/v1',
      kind: 'Setting',
      metadata: { name: 'kv-cache-backend-image', namespace: 'gpustack-system' },
      spec: { value: '' },
    } as KubeObject;
    await cluster.client.create(setting);
    await waitFor(() => (operator.ctx.settings.get('kv-cache-backend-image') === '' ? true : undefined), {
      what: 'the Setting to reach the webhook',
      timeoutMs: 5000,
    });
    try {
      await refused(backend(fresh()), 'spec.image', 'kv-cache-backend-image');
      await cluster.client.create(backend(fresh(), {}, { image: 'registry.example.com/kvpool-store:1.0' }));
    } finally {
      await cluster.client.delete({
        ...setting,
        name: 'kv-cache-backend-image',
        namespace: 'gpustack-system',
      });
      // The next tests rely on the default image again: wait until the webhook sees the Setting gone.
      await waitFor(() => (operator.ctx.settings.get('kv-cache-backend-image') !== '' ? true : undefined), {
        what: 'the Setting’s deletion to reach the webhook',
        timeoutMs: 5000,
      });
    }
  });

  it('refuses reordering member groups and removing a group that is not the last', async () => {
    const name = fresh();
    const a = group();
    const b = group({ nodeSelector: { pool: 'b' } });
    const c = group({ nodeSelector: { pool: 'c' } });
    await cluster.client.create(backend(name, { members: [a, b, c] }));
    const members = (live: KVCacheBackend) => live.spec.connection.managed!.members as unknown[];
    await editRefused(
      name,
      (live) => {
        live.spec.connection.managed!.members = [a, c] as never;
      },
      'spec.connection.managed.members',
    );
    await editRefused(
      name,
      (live) => {
        const m = members(live);
        [m[0], m[1]] = [m[1], m[0]];
      },
      'spec.connection.managed.members',
    );
    await replaceWith(name, (live) => members(live).pop()); // removing the last group is allowed
  });

  it('refuses adding a disk tier to a running member group (declare it on a new backend)', async () => {
    const name = fresh();
    await cluster.client.create(backend(name));
    await editRefused(
      name,
      (live) => {
        (live.spec.connection.managed!.members[0] as Spec).localDisks = [{ path: '/var/lib/kvcache' }];
      },
      'spec.connection.managed.members[0].localDisks',
      'new backend',
    );
  });

  it('refuses turning multiTenancy off while a pool uses the backend, naming the pool', async () => {
    const name = fresh();
    await cluster.client.create(backend(name));
    await cluster.client.create({
      apiVersion: v1,
      kind: 'KVCachePool',
      metadata: { name: `${name}-pool` },
      spec: { backends: [name], quota: { total: '1Gi' } },
    } as KubeObject);
    await waitFor(
      async () =>
        (await cluster.client.get<KVCacheBackend>({ apiVersion: v1, kind: 'KVCacheBackend', name })).status
          ?.usedBy?.length
          ? true
          : undefined,
      { what: 'the pool to show in usedBy', timeoutMs: 10_000 },
    );
    await editRefused(
      name,
      (live) => {
        live.spec.connection.managed!.leader.multiTenancy = false;
      },
      'spec.connection.managed.leader.multiTenancy',
      `KVCachePool/${name}-pool`,
    );
  });
});
