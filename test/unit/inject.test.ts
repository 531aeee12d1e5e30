// The injection renderer shared by the ModelDeployment controller and the Pod webhook: what an engine
// container receives to reach its Binding's domain on the store (KV-cache spec §6.2).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Container, EnvVar } from 'kubernetes-types/core/v1.js';
import { type InjectInput, injectCache } from '../../src/inject/inject.ts';
import type { CacheConnection } from '../../src/inject/types.ts';

const connection: CacheConnection = {
  binding: 'team-a',
  pool: 'shared-dram',
  domain: { name: 'qwen-fp8-v1', blockSize: 16, dtype: 'fp8_e4m3' },
  masterAddress: 'mooncake-dram-leader.gpustack-system.svc:50051',
  protocol: 'tcp',
  tenantInjected: true,
};

const vllmContainer: Container = {
  name: 'vllm',
  image: 'vllm/vllm-openai:v0.29.0',
  command: ['vllm', 'serve', 'Qwen/Qwen2.5-7B-Instruct'],
  args: ['--max-model-len', '4096'],
};
const sglangContainer: Container = {
  name: 'sglang',
  command: ['python3', '-m', 'sglang.launch_server', '--model-path', 'Qwen/Qwen2.5-7B-Instruct'],
};

function inject(change: Partial<InjectInput> = {}) {
  return injectCache({
    engine: 'vllm',
    container: vllmContainer,
    volumes: [],
    annotations: { 'kvcache.gpustack.ai/binding': 'team-a' },
    connection,
    dtypeOwned: true,
    placement: 'args',
    ...change,
  });
}

function env(container: Container, name: string): EnvVar[] {
  return (container.env ?? []).filter((e) => e.name === name);
}

function after(argv: string[] | undefined, flag: string): string | undefined {
  const i = argv?.indexOf(flag) ?? -1;
  return i < 0 ? undefined : argv?.[i + 1];
}

describe('vLLM family (file vehicle)', () => {
  it('appends the store connector, dtype and block size to args, after the user args', () => {
    const out = inject();
    assert.deepEqual(out.container.command, vllmContainer.command);
    assert.deepEqual(out.container.args, [
      '--max-model-len',
      '4096',
      '--kv-transfer-config',
      '{"kv_connector":"MooncakeStoreConnector","kv_role":"kv_both","kv_load_failure_policy":"recompute"}',
      '--kv-cache-dtype',
      'fp8_e4m3',
      '--block-size',
      '16',
    ]);
  });

  it('renders a float32 domain as the engine spells it: float32 weights, whose KV the engine keeps in float32', () => {
    const f32 = { ...connection, domain: { ...connection.domain, dtype: 'float32', blockSize: 64 } };
    const out = inject({ connection: f32 });
    assert.deepEqual(out.container.args?.slice(-6), [
      '--dtype',
      'float32',
      '--kv-cache-dtype',
      'auto',
      '--block-size',
      '64',
    ]);
  });

  it('folds the flags into command when asked to', () => {
    const out = inject({ placement: 'command' });
    assert.deepEqual(out.container.args, vllmContainer.args);
    assert.equal(after(out.container.command, '--block-size'), '16');
  });

  it('writes every client-config key in order, and projects it into a read-only file', () => {
    const out = inject();
    assert.equal(
      out.annotations['kvcache.gpustack.ai/client-config'],
      '{"metadata_server":"P2PHANDSHAKE","master_server_address":"mooncake-dram-leader.gpustack-system.svc:50051","protocol":"tcp","device_name":"","mode":"standalone-store","global_segment_size":0,"local_buffer_size":134217728,"tenant_id":"qwen-fp8-v1"}',
    );
    assert.deepEqual(out.volumes, [
      {
        name: 'gpustack-kvcache-config',
        downwardAPI: {
          items: [
            {
              path: 'mooncake.json',
              fieldRef: { fieldPath: "metadata.annotations['kvcache.gpustack.ai/client-config']" },
            },
          ],
        },
      },
    ]);
    assert.deepEqual(out.container.volumeMounts, [
      { name: 'gpustack-kvcache-config', mountPath: '/etc/gpustack/kvcache', readOnly: true },
    ]);
    assert.deepEqual(env(out.container, 'MOONCAKE_CONFIG_PATH'), [
      { name: 'MOONCAKE_CONFIG_PATH', value: '/etc/gpustack/kvcache/mooncake.json' },
    ]);
    assert.equal(out.annotations['kvcache.gpustack.ai/binding'], 'team-a', 'user annotations are kept');
  });

  it('writes no tenant_id when the pool reports no ledger', () => {
    const out = inject({ connection: { ...connection, tenantInjected: false } });
    const config = JSON.parse(out.annotations['kvcache.gpustack.ai/client-config']!);
    assert.equal('tenant_id' in config, false);
    assert.equal(out.record.tenantInjected, false);
  });

  it('maps the role onto kv_role and vLLM-Ascend onto its own connector', () => {
    const config = (change: Partial<InjectInput>) =>
      JSON.parse(after(inject(change).container.args, '--kv-transfer-config')!);
    assert.equal(config({ role: 'Prefill' }).kv_role, 'kv_producer');
    assert.equal(config({ role: 'Decode' }).kv_role, 'kv_consumer');
    assert.deepEqual(config({ engine: 'vllm-ascend' }), {
      kv_connector: 'AscendStoreConnector',
      kv_role: 'kv_both',
      kv_load_failure_policy: 'recompute',
    });
  });

  it('recomputes what a failed or stalled load would have brought, unless failing is asked for', () => {
    const policy = (change: Partial<InjectInput>) =>
      JSON.parse(after(inject(change).container.args, '--kv-transfer-config')!).kv_load_failure_policy;
    assert.equal(policy({}), 'recompute');
    assert.equal(policy({ loadFailurePolicy: 'recompute' }), 'recompute');
    assert.equal(policy({ loadFailurePolicy: 'fail' }), 'fail');
    assert.equal(policy({ engine: 'vllm-ascend', loadFailurePolicy: 'fail' }), 'fail');
  });

  it('renders no dtype when the Setting does not own it', () => {
    const args = inject({ dtypeOwned: false }).container.args!;
    assert.equal(args.includes('--kv-cache-dtype'), false);
    assert.equal(after(args, '--block-size'), '16');
  });

  it('records what was injected in the injected annotation', () => {
    const out = inject({ launch: { program: '/entrypoint.sh', argsForwarded: true } });
    const record = {
      binding: 'team-a',
      engine: 'vllm',
      vehicle: 'file',
      domain: 'qwen-fp8-v1',
      tenantInjected: true,
      launchProgram: '/entrypoint.sh',
      launchArgsForwarded: true,
    };
    assert.deepEqual(out.record, record);
    assert.equal(out.annotations['kvcache.gpustack.ai/injected'], JSON.stringify(record));
  });

  it('defaults the metrics switches only where the container leaves them unset', () => {
    const out = inject({ container: { ...vllmContainer, env: [{ name: 'MC_TE_METRIC', value: '0' }] } });
    assert.deepEqual(env(out.container, 'MC_TE_METRIC'), [{ name: 'MC_TE_METRIC', value: '0' }]);
    assert.deepEqual(env(out.container, 'MC_STORE_CLIENT_METRIC_BANDWIDTH'), [
      { name: 'MC_STORE_CLIENT_METRIC_BANDWIDTH', value: '1' },
    ]);
  });

  it('does not change the input objects', () => {
    const container = structuredClone(vllmContainer);
    inject({ container });
    assert.deepEqual(container, vllmContainer);
  });
});

describe('SGLang (environment vehicle)', () => {
  const sglang = (change: Partial<InjectInput> = {}) =>
    inject({ engine: 'sglang', container: sglangContainer, ...change });

  it('adds the storage backend, hierarchical cache, dtype and page size', () => {
    assert.deepEqual(sglang().container.args, [
      '--hicache-storage-backend',
      'mooncake',
      '--enable-hierarchical-cache',
      '--kv-cache-dtype',
      'fp8_e4m3',
      '--page-size',
      '16',
    ]);
  });

  it("leaves the storage prefetch policy to SGLang, whose default (timeout) bounds a slow store's wait", () => {
    assert.equal(
      sglang({ loadFailurePolicy: 'fail' }).container.args?.includes('--hicache-storage-prefetch-policy'),
      false,
    );
    const container = { ...sglangContainer, args: ['--hicache-storage-prefetch-policy', 'wait_complete'] };
    assert.deepEqual(sglang({ container }).container.args?.slice(0, 2), [
      '--hicache-storage-prefetch-policy',
      'wait_complete',
    ]);
  });

  it('keeps a hierarchical-cache flag the container already has', () => {
    const container = { ...sglangContainer, args: ['--enable-hierarchical-cache', '--hicache-ratio', '2'] };
    const args = sglang({ container }).container.args!;
    assert.equal(args.filter((a) => a === '--enable-hierarchical-cache').length, 1);
  });

  it('reaches the store through the environment, with no volume and no client-config', () => {
    const out = sglang();
    const byName = Object.fromEntries((out.container.env ?? []).map((e) => [e.name, e.value ?? e.valueFrom]));
    assert.deepEqual(byName, {
      MOONCAKE_MASTER: 'mooncake-dram-leader.gpustack-system.svc:50051',
      MOONCAKE_TE_META_DATA_SERVER: 'P2PHANDSHAKE',
      MOONCAKE_PROTOCOL: 'tcp',
      MOONCAKE_DEVICE: '',
      MOONCAKE_GLOBAL_SEGMENT_SIZE: '0',
      MOONCAKE_LOCAL_HOSTNAME: { fieldRef: { fieldPath: 'status.podIP' } },
      MOONCAKE_TENANT_ID: 'qwen-fp8-v1',
      MC_TE_METRIC: '1',
      MC_STORE_CLIENT_METRIC_BANDWIDTH: '1',
      MC_RPC_TIMEOUT_MS: '5000',
      MC_RPC_CONNECT_TIMEOUT_MS: '2000',
    });
    assert.deepEqual(out.volumes, []);
    assert.equal(out.container.volumeMounts, undefined);
    assert.equal(out.annotations['kvcache.gpustack.ai/client-config'], undefined);
    assert.equal(out.record.vehicle, 'environment');
    assert.equal(out.record.launchProgram, 'python3 -m sglang.launch_server');
  });

  it('overwrites a user MOONCAKE_TENANT_ID in place, leaving one entry', () => {
    const container = {
      ...sglangContainer,
      env: [
        { name: 'A', value: '1' },
        { name: 'MOONCAKE_TENANT_ID', value: 'team-b' },
        { name: 'B', value: '2' },
        { name: 'MOONCAKE_TENANT_ID', value: 'team-c' },
      ],
    };
    const names = (sglang({ container }).container.env ?? []).map((e) => `${e.name}=${e.value ?? ''}`);
    assert.deepEqual(names.slice(0, 3), ['A=1', 'MOONCAKE_TENANT_ID=qwen-fp8-v1', 'B=2']);
    assert.equal(names.filter((n) => n.startsWith('MOONCAKE_TENANT_ID=')).length, 1);
  });

  it('sets no tenant without a ledger, and ignores the role', () => {
    const out = sglang({ connection: { ...connection, tenantInjected: false }, role: 'Decode' });
    assert.deepEqual(env(out.container, 'MOONCAKE_TENANT_ID'), []);
    assert.equal(out.container.args?.includes('--kv-transfer-config'), false);
  });
});
