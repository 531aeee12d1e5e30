// ModelDeployments and opted-in Pods on a real apiserver (with its Deployment controller) and a real
// multi-tenant master: what the engines are given, what is refused, and the Binding's hold.

import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { KVCachePool, ModelDeployment } from '../../src/api/types.ts';
import { ApiError } from '../../src/kube/errors.ts';
import type { KubeObject } from '../../src/kube/object.ts';
import { binding, type EnginePod, externalBackend, instanceType, pool, v1 } from '../builders/index.ts';
import { ensureNamespace } from '../support/cluster.ts';
import { type IsolatedCluster, startIsolatedCluster } from '../support/isolated-cluster.ts';
import { MooncakeStore } from '../support/mooncake-store.ts';
import { type InProcessOperator, startOperatorInProcess } from '../support/operator.ts';
import { condition, untilBinding, untilPool } from '../support/pool-waits.ts';
import { refusalOf } from '../support/refusal.ts';
import { seedObjects } from '../support/seed.ts';
import { waitFor } from '../support/wait.ts';

type Loose = KubeObject & {
  spec: Record<string, never> & {
    template: {
      metadata: KubeObject['metadata'];
      spec: {
        containers: { command: string[]; env?: { name: string; value?: string }[] }[];
        volumes?: { name: string }[];
      };
    };
  };
};
describe('ModelDeployment and Pod injection', () => {
  let cluster: IsolatedCluster;
  let store: MooncakeStore;
  let operator: InProcessOperator;
  const deployment = (name: string, namespace = 'team-a') =>
    waitFor(
      async () => cluster.client.find<Loose>({ apiVersion: 'apps/v1', kind: 'Deployment', namespace, name }),
      { what: `Deployment ${name}`, timeoutMs: 15_000 },
    );
  const refused = async (obj: KubeObject, ...says: string[]) => {
    await refusalOf(cluster.client.create(obj), ...says);
  };
  const pod = (
    name: string,
    labels: Record<string, string>,
    annotations: Record<string, string>,
    command = ['vllm', 'serve', 'Qwen/Qwen2.5-7B-Instruct'],
  ): EnginePod =>
    ({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name, namespace: 'team-a', labels, annotations },
      spec: { containers: [{ name: 'engine', image: 'gpustack/runner:cuda13.0-vllm0.29.0', command }] },
    }) as EnginePod;

  before(async () => {
    [cluster, store] = await Promise.all([
      startIsolatedCluster({ controllers: true }),
      MooncakeStore.start({ members: 1, memberBytes: 64 << 20, tenants: [] }),
    ]);
    for (const ns of ['gpustack-system', 'team-a']) await ensureNamespace(cluster.client, ns);
    operator = await startOperatorInProcess(cluster.cp.kubeconfigPath, { webhooks: true });
    await cluster.client.create(instanceType('local'));
    await cluster.client.create(externalBackend('mooncake-dram', store));
    await cluster.client.create(pool('shared-dram', { backend: 'mooncake-dram', total: '64Mi' }));
    for (const obj of seedObjects('step-2-pool-binding.yaml').filter(
      (o) => o.kind === 'KVCachePoolBinding',
    )) {
      await cluster.client.create({
        ...obj,
        spec: { ...(obj as unknown as { spec: object }).spec, quota: { ceiling: '32Mi' } },
      } as KubeObject);
    }
    await cluster.client.create(
      binding('team-a', 'qwen-fp8', {
        pool: 'shared-dram',
        ceiling: '16Mi',
        domain: 'qwen-fp8-v1',
        blockSize: 16,
        dtype: 'fp8_e4m3',
      }),
    );
    await untilBinding(cluster.client, 'team-a', 'team-a', 'Ready', (b) => b.status?.phase === 'Ready');
    await untilBinding(cluster.client, 'team-a', 'qwen-fp8', 'Ready', (b) => b.status?.phase === 'Ready');
  });
  after(async () => {
    await operator?.stop();
    await store?.stop();
    await cluster?.stop();
  });

  it('renders Step 3 with the store connector, the client config, the dtype and the block size', async () => {
    for (const obj of seedObjects('step-3-workload.yaml', 'local')) await cluster.client.create(obj);
    const d = await deployment('qwen-chat-server');
    assert.equal((d.spec as { replicas?: number }).replicas, 2);
    const c = d.spec.template.spec.containers[0]!;
    assert.deepEqual(c.command.slice(0, 3), ['vllm', 'serve', 'Qwen/Qwen2.5-7B-Instruct']);
    const at = (flag: string) => c.command[c.command.indexOf(flag) + 1];
    assert.deepEqual(JSON.parse(at('--kv-transfer-config')!), {
      kv_connector: 'MooncakeStoreConnector',
      kv_role: 'kv_both',
      kv_load_failure_policy: 'recompute',
    });
    assert.equal(at('--kv-cache-dtype'), 'bfloat16');
    assert.equal(at('--block-size'), '64');
    assert.equal(
      c.env?.find((e) => e.name === 'MOONCAKE_CONFIG_PATH')?.value,
      '/etc/gpustack/kvcache/mooncake.json',
    );
    const config = JSON.parse(
      d.spec.template.metadata.annotations?.['kvcache.gpustack.ai/client-config'] ?? '{}',
    );
    assert.equal(config.master_server_address, store.rpcAddress);
    assert.equal(config.tenant_id, 'default');
    assert.equal(config.protocol, 'tcp');
    const md = await waitFor(
      async () => {
        const m = await cluster.client.get<ModelDeployment>({
          apiVersion: v1,
          kind: 'ModelDeployment',
          namespace: 'team-a',
          name: 'qwen-chat',
        });
        return condition(m, 'DomainRegistered')?.status === 'True' ? m : undefined;
      },
      { what: 'DomainRegistered', timeoutMs: 10_000 },
    );
    assert.deepEqual(md.status?.kvCache, {
      binding: 'team-a',
      pool: 'shared-dram',
      domain: { name: 'default', blockSize: 64, dtype: 'bfloat16' },
    });
    assert.equal(
      condition(md, 'CacheAttached')?.reason,
      'NoReplicaReady',
      'no kubelet runs these replicas here',
    );
  });

  it('renders Step 6 (fp8 dtype, block size 16, its own tenant)', async () => {
    const md = seedObjects('step-6-second-team.yaml', 'local').find((o) => o.kind === 'ModelDeployment')!;
    await cluster.client.create(md);
    const c = (await deployment('qwen-chat-fp8-server')).spec.template.spec.containers[0]!;
    const joined = c.command.join(' ');
    assert.match(joined, /--kv-cache-dtype fp8_e4m3/);
    assert.match(joined, /--block-size 16/);
    const d = await deployment('qwen-chat-fp8-server');
    assert.equal(
      JSON.parse(d.spec.template.metadata.annotations?.['kvcache.gpustack.ai/client-config'] ?? '{}')
        .tenant_id,
      'qwen-fp8-v1',
    );
  });

  it('records deployments in the Binding’s usedBy and holds its deletion while they exist', async () => {
    const b = await untilBinding(
      cluster.client,
      'team-a',
      'team-a',
      'usedBy',
      (x) => x.status?.usedBy?.some((u) => u.name === 'qwen-chat') === true,
    );
    assert.deepEqual(b.status?.usedBy, [{ kind: 'ModelDeployment', namespace: '', name: 'qwen-chat' }]);
    await cluster.client.delete({
      apiVersion: v1,
      kind: 'KVCachePoolBinding',
      namespace: 'team-a',
      name: 'team-a',
    });
    await untilBinding(
      cluster.client,
      'team-a',
      'team-a',
      'HeldByWorkloads',
      (x) => condition(x, 'Releasable')?.reason === 'HeldByWorkloads',
    );
  });

  it('refuses owned flags and env in a role, in every spelling, and an edit of kvCache', async () => {
    const base = seedObjects('step-3-workload.yaml', 'local')[0] as ModelDeployment;
    const withArgs = (name: string, role: Record<string, unknown>) =>
      ({
        ...base,
        metadata: { name, namespace: 'team-a' },
        spec: { ...base.spec, roles: [{ ...base.spec.roles[0], ...role }] },
      }) as unknown as KubeObject;
    await refused(
      withArgs('r1', { extraArgs: ['--kv-cache-dtype', 'fp8'] }),
      'spec.roles[0].extraArgs[0]',
      '--kv-cache-dtype',
    );
    await refused(
      withArgs('r2', { extraArgs: ['--kv_transfer_config={}'] }),
      'spec.roles[0].extraArgs[0]',
      'roles[].command',
    );
    await refused(
      withArgs('r3', { extraArgs: ['--kv-transfer-config.kv_role=kv_both'] }),
      'spec.roles[0].extraArgs[0]',
    );
    await refused(
      withArgs('r3b', { extraArgs: ['--kv-transfer-config.kv_load_failure_policy=fail'] }),
      'spec.roles[0].extraArgs[0]',
      'HTTP 500',
      'kvcache.gpustack.ai/kv-load-failure-policy: "fail"',
    );
    await refused(
      withArgs('r4', { env: [{ name: 'MOONCAKE_CONFIG_PATH', value: '/x' }] }),
      'spec.roles[0].env[0]',
      'MOONCAKE_CONFIG_PATH',
    );
    await refused(
      withArgs('r5', { extraArgs: ['--block-size=32'] }),
      'spec.roles[0].extraArgs[0]',
      '--block-size',
    );
    await cluster.client.create(withArgs('r6', { extraArgs: ['--max-model-len', '4096'] }));
    // The controller adds its finalizer meanwhile: retry the edit on a resourceVersion conflict.
    const edit = async (): Promise<unknown> => {
      const live = await cluster.client.get<ModelDeployment>({
        apiVersion: v1,
        kind: 'ModelDeployment',
        namespace: 'team-a',
        name: 'r6',
      });
      return cluster.client
        .replace({ ...live, spec: { ...live.spec, kvCache: { poolRef: { name: 'qwen-fp8' } } } })
        .catch((err: unknown) => {
          if (err instanceof ApiError && err.isConflict) return edit();
          throw err;
        });
    };
    await assert.rejects(edit(), /spec\.kvCache is immutable/);
  });

  it('refuses a role that asks for a privileged engine or a node path, naming the way out', async () => {
    const base = seedObjects('step-3-workload.yaml', 'local')[0] as ModelDeployment;
    const withRole = (name: string, role: Record<string, unknown>) =>
      ({
        ...base,
        metadata: { name, namespace: 'team-a' },
        spec: { ...base.spec, roles: [{ ...base.spec.roles[0], ...role }] },
      }) as unknown as KubeObject;
    const rule = 'the operator creates engine Pods with its own rights';
    await refused(
      withRole('p1', { privileged: true }),
      'spec.roles[0].privileged',
      rule,
      'kvcache.gpustack.ai/inject=true',
    );
    await refused(
      withRole('p2', { additionalVolumes: [{ name: 'node', hostPath: { path: '/' }, mountPath: '/host' }] }),
      'spec.roles[0].additionalVolumes',
      'hostPath',
      rule,
    );
  });

  it('injects an opted-in Pod and records what it did; leaves other Pods untouched', async () => {
    const created = await cluster.client.create<EnginePod>(
      pod(
        'vllm-pod',
        { 'kvcache.gpustack.ai/inject': 'true' },
        { 'kvcache.gpustack.ai/binding': 'qwen-fp8', 'kvcache.gpustack.ai/engine': 'vLLM' },
      ),
    );
    const args = created.spec.containers[0]!.args ?? [];
    assert.ok(
      args.includes('--kv-transfer-config') &&
        args.includes('--kv-cache-dtype') &&
        args.includes('--block-size'),
      String(args),
    );
    const record = JSON.parse(created.metadata.annotations?.['kvcache.gpustack.ai/injected'] ?? '{}');
    assert.deepEqual(record, {
      binding: 'qwen-fp8',
      engine: 'vllm',
      vehicle: 'file',
      domain: 'qwen-fp8-v1',
      tenantInjected: true,
      launchProgram: 'vllm',
      launchArgsForwarded: false,
    });
    const plain = await cluster.client.create<EnginePod>(
      pod('plain-pod', {}, { 'kvcache.gpustack.ai/binding': 'qwen-fp8' }),
    );
    assert.equal(plain.spec.containers[0]!.args, undefined);
    assert.equal(plain.metadata.annotations?.['kvcache.gpustack.ai/injected'], undefined);
  });

  it('refuses Pods that break the contract, naming the fix', async () => {
    const opt = { 'kvcache.gpustack.ai/inject': 'true' };
    await refused(
      pod('p1', opt, {
        'kvcache.gpustack.ai/binding': 'qwen-fp8',
        'kvcache.gpustack.ai/engine': 'vLLM',
        'kvcache.gpustack.ai/domain': 'x',
      }),
      'kvcache.gpustack.ai/domain',
      'not part of the injection contract',
    );
    await refused(
      pod('p2', opt, { 'kvcache.gpustack.ai/engine': 'vLLM' }),
      'kvcache.gpustack.ai/binding',
      'required',
    );
    await refused(
      pod('p3', opt, { 'kvcache.gpustack.ai/binding': 'nope', 'kvcache.gpustack.ai/engine': 'vLLM' }),
      'nope does not exist in namespace team-a',
    );
    await refused(
      pod('p4', opt, { 'kvcache.gpustack.ai/binding': 'qwen-fp8', 'kvcache.gpustack.ai/engine': 'vLLM' }, [
        'sh',
        '-c',
        'vllm serve m',
      ]),
      'sh -c',
    );
    await refused(
      pod('p5', opt, { 'kvcache.gpustack.ai/binding': 'qwen-fp8', 'kvcache.gpustack.ai/engine': 'vLLM' }, [
        'vllm',
        'serve',
        'm',
        '--kv-cache-dtype',
        'auto',
      ]),
      '--kv-cache-dtype',
    );
  });

  it('freezes the injected record after create', async () => {
    const live = await cluster.client.get<EnginePod>({
      apiVersion: 'v1',
      kind: 'Pod',
      namespace: 'team-a',
      name: 'vllm-pod',
    });
    await assert.rejects(
      cluster.client.mergePatch(
        { apiVersion: 'v1', kind: 'Pod', namespace: 'team-a', name: 'vllm-pod' },
        { metadata: { annotations: { 'kvcache.gpustack.ai/injected': '{}' } } },
      ),
      /written by the injection webhook/,
    );
    assert.ok(live.metadata.annotations?.['kvcache.gpustack.ai/client-config']);
  });

  // The last two tests in this file: each stops one of the operator's caches for real, so the cache holds no Binding
  // created from then on — the state every cache is in for a moment after a create, made to last.
  it('injects a Pod naming a Binding its cache has not seen yet (admission re-reads the apiserver)', async () => {
    await operator.ctx.informers.get({ apiVersion: v1, kind: 'KVCachePoolBinding' }).stop();
    await cluster.client.create(
      binding('team-a', 'late', { pool: 'shared-dram', ceiling: '8Mi', domain: 'late-v1' }),
    );
    const created = await cluster.client.create<EnginePod>(
      pod(
        'late-pod',
        { 'kvcache.gpustack.ai/inject': 'true' },
        { 'kvcache.gpustack.ai/binding': 'late', 'kvcache.gpustack.ai/engine': 'vLLM' },
      ),
    );
    const record = JSON.parse(created.metadata.annotations?.['kvcache.gpustack.ai/injected'] ?? '{}');
    assert.equal(record.domain, 'late-v1');
    assert.ok(created.spec.containers[0]!.args?.includes('--kv-transfer-config'));
  });

  // Also stops a cache for real: the pool cache, frozen while the pool's master is down.
  it('injects a Pod once its pool is Ready again though the cache still shows it unusable (a refusal is judged again)', async () => {
    const pools = operator.ctx.informers.get<KVCachePool>({ apiVersion: v1, kind: 'KVCachePool' });
    const ledgerOf = (p: KVCachePool | undefined) =>
      p ? condition(p, 'QuotaLedgerAvailable')?.status : undefined;
    await store.stopMaster();
    await waitFor(() => (ledgerOf(pools.get('shared-dram')) !== 'True' ? true : undefined), {
      what: 'the cached pool to lose its ledger',
    });
    await pools.stop();
    await store.startMaster();
    await untilPool(
      cluster.client,
      'shared-dram',
      'Ready again',
      (x) => x.status?.phase === 'Ready' && ledgerOf(x) === 'True',
      60_000,
    );
    assert.notEqual(ledgerOf(pools.get('shared-dram')), 'True', 'the cache still shows the pool from before');
    const created = await cluster.client.create<EnginePod>(
      pod(
        'after-restart',
        { 'kvcache.gpustack.ai/inject': 'true' },
        { 'kvcache.gpustack.ai/binding': 'qwen-fp8', 'kvcache.gpustack.ai/engine': 'vLLM' },
      ),
    );
    assert.ok(created.spec.containers[0]!.args?.includes('--kv-transfer-config'));
  });
});
