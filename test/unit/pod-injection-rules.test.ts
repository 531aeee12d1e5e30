// The Pod injection contract (KV-cache spec §3.5, §6.1, §6.2, §6.4): an opted-in Pod that names its
// Binding and engine gets a JSON patch attaching it to the pool; anything the webhook cannot trust is
// refused with the field and the fix; the written keys are frozen afterwards.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Container } from 'kubernetes-types/core/v1.js';
import { frozenKeyRefusal } from '../../src/webhooks/pod-injection-rules.ts';
import {
  backend,
  binding,
  clientEndpoint,
  cond,
  group,
  injectionContext,
  optedInPod,
  pool,
  readyPool,
  sglang,
  vllm,
} from '../builders/index.ts';
import { accepted, op, refused } from '../support/admission-verdicts.ts';

describe('planPodInjection: accepted Pods', () => {
  it('attaches a vLLM Pod through the client-config file', () => {
    const patch = accepted(optedInPod());
    assert.deepEqual(
      patch.map((o) => [o.op, o.path]),
      [
        ['replace', '/spec/containers/0'],
        ['add', '/spec/volumes'],
        ['add', '/metadata/annotations/kvcache.gpustack.ai~1client-config'],
        ['add', '/metadata/annotations/kvcache.gpustack.ai~1injected'],
      ],
    );
    const container = op(patch, '/spec/containers/0')!.value as Container;
    assert.deepEqual(container.command, vllm.command);
    assert.deepEqual(container.args, [
      '--max-model-len',
      '4096',
      '--kv-transfer-config',
      '{"kv_connector":"MooncakeStoreConnector","kv_role":"kv_both","kv_load_failure_policy":"recompute"}',
      '--kv-cache-dtype',
      'fp8_e4m3',
      '--block-size',
      '16',
    ]);
    assert.deepEqual(container.volumeMounts, [
      { name: 'gpustack-kvcache-config', mountPath: '/etc/gpustack/kvcache', readOnly: true },
    ]);
    assert.deepEqual(op(patch, '/spec/volumes')!.value, [
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
    const config = JSON.parse(
      op(patch, '/metadata/annotations/kvcache.gpustack.ai~1client-config')!.value as string,
    );
    assert.equal(config.master_server_address, clientEndpoint);
    assert.equal(config.protocol, 'tcp');
    assert.equal(config.tenant_id, 'qwen-fp8-v1');
    assert.deepEqual(
      JSON.parse(op(patch, '/metadata/annotations/kvcache.gpustack.ai~1injected')!.value as string),
      {
        binding: 'team-a',
        engine: 'vllm',
        vehicle: 'file',
        domain: 'qwen-fp8-v1',
        tenantInjected: true,
        launchProgram: 'vllm',
        launchArgsForwarded: false,
      },
    );
  });

  it('writes kv_load_failure_policy fail only for a Pod annotated so', () => {
    const policyOf = (annotations: Record<string, string>) => {
      const args = (op(accepted(optedInPod([vllm], annotations)), '/spec/containers/0')!.value as Container)
        .args!;
      return JSON.parse(args[args.indexOf('--kv-transfer-config') + 1]!).kv_load_failure_policy;
    };
    assert.equal(policyOf({}), 'recompute');
    assert.equal(policyOf({ 'kvcache.gpustack.ai/kv-load-failure-policy': 'recompute' }), 'recompute');
    assert.equal(policyOf({ 'kvcache.gpustack.ai/kv-load-failure-policy': 'fail' }), 'fail');
  });

  it('replaces the volume list when the Pod already has volumes', () => {
    const p = optedInPod();
    p.spec.volumes = [{ name: 'models', emptyDir: {} }];
    const volumes = op(accepted(p), '/spec/volumes')!;
    assert.equal(volumes.op, 'replace');
    assert.deepEqual(
      (volumes.value as { name: string }[]).map((v) => v.name),
      ['models', 'gpustack-kvcache-config'],
    );
  });

  it('attaches an SGLang Pod through the environment, with no volume or client config', () => {
    const patch = accepted(optedInPod([sglang], { 'kvcache.gpustack.ai/engine': 'SGLang' }));
    assert.deepEqual(
      patch.map((o) => o.path),
      ['/spec/containers/0', '/metadata/annotations/kvcache.gpustack.ai~1injected'],
    );
    const container = op(patch, '/spec/containers/0')!.value as Container;
    assert.deepEqual(container.args, [
      '--hicache-storage-backend',
      'mooncake',
      '--enable-hierarchical-cache',
      '--kv-cache-dtype',
      'fp8_e4m3',
      '--page-size',
      '16',
    ]);
    const env = Object.fromEntries((container.env ?? []).map((e) => [e.name, e.value]));
    assert.equal(env.MOONCAKE_MASTER, clientEndpoint);
    assert.equal(env.MOONCAKE_PROTOCOL, 'tcp');
    assert.equal(env.MOONCAKE_TENANT_ID, 'qwen-fp8-v1');
    const record = JSON.parse(patch[1]!.value as string);
    assert.equal(record.vehicle, 'environment');
  });

  it('writes no tenant when the pool reports a master without multi-tenancy', () => {
    const c = injectionContext({
      pool: readyPool(cond('QuotaLedgerAvailable', 'False', 'MultiTenancyDisabled')),
    });
    const patch = accepted(optedInPod(), c);
    const config = JSON.parse(
      op(patch, '/metadata/annotations/kvcache.gpustack.ai~1client-config')!.value as string,
    );
    assert.equal(config.tenant_id, undefined);
    assert.match(
      op(patch, '/metadata/annotations/kvcache.gpustack.ai~1injected')!.value as string,
      /"tenantInjected":false/,
    );
  });
});

describe('planPodInjection: the annotations', () => {
  it('refuses an unknown kvcache.gpustack.ai/ annotation, the domain one included', () => {
    assert.match(
      refused(optedInPod([vllm], { 'kvcache.gpustack.ai/domain': 'someone-else' })),
      /^metadata\.annotations\[kvcache\.gpustack\.ai\/domain\] is not part of the injection contract \(the domain comes from the Binding\); remove it$/,
    );
  });

  it('refuses a user-supplied injected or client-config annotation', () => {
    assert.equal(
      refused(optedInPod([vllm], { 'kvcache.gpustack.ai/client-config': '{}' })),
      'metadata.annotations[kvcache.gpustack.ai/client-config] is written by the injection webhook; remove it',
    );
    assert.match(
      refused(optedInPod([vllm], { 'kvcache.gpustack.ai/injected': '{}' })),
      /^metadata\.annotations\[kvcache\.gpustack\.ai\/injected\]: the injected flags are not in the container’s args; the injection webhook writes it, and this Pod does not carry what it writes: remove it/,
    );
  });

  it('refuses a kv-load-failure-policy that names no policy, and on SGLang', () => {
    assert.equal(
      refused(optedInPod([vllm], { 'kvcache.gpustack.ai/kv-load-failure-policy': 'never' })),
      'metadata.annotations[kvcache.gpustack.ai/kv-load-failure-policy]: "never" is not a policy; set "fail" to fail a request whose load from the store fails or stalls, or remove it (the injection writes recompute)',
    );
    assert.equal(
      refused(
        optedInPod([sglang], {
          'kvcache.gpustack.ai/engine': 'SGLang',
          'kvcache.gpustack.ai/kv-load-failure-policy': 'fail',
        }),
      ),
      'metadata.annotations[kvcache.gpustack.ai/kv-load-failure-policy] applies to vLLM only (SGLang computes what a slow or failed prefetch from the store does not bring, and has no failing policy); remove it',
    );
  });

  it('refuses a missing binding, or one with a namespace part', () => {
    const p = optedInPod();
    delete p.metadata.annotations!['kvcache.gpustack.ai/binding'];
    assert.match(
      refused(p),
      /^metadata\.annotations\[kvcache\.gpustack\.ai\/binding\] is required: name a KVCachePoolBinding/,
    );
    assert.match(
      refused(optedInPod([vllm], { 'kvcache.gpustack.ai/binding': 'team-b/theirs' })),
      /"team-b\/theirs" must be a Binding name in the Pod's own namespace, without a namespace part/,
    );
  });

  it('refuses a binding that is not an object name, naming the annotation, the rule and the fix', () => {
    for (const name of ['Team_A', 'team a', '-team-a', 'team-a.', '..', 'a'.repeat(254)]) {
      const message = refused(optedInPod([vllm], { 'kvcache.gpustack.ai/binding': name }));
      assert.ok(
        message.startsWith(
          `metadata.annotations[kvcache.gpustack.ai/binding]: "${name}" is not an object name:`,
        ),
        message,
      );
      assert.match(message, /DNS-1123 subdomain/);
      assert.match(message, /write the name of a KVCachePoolBinding in the Pod's namespace/);
    }
    accepted(optedInPod([vllm], { 'kvcache.gpustack.ai/binding': 'team-a.v2' }));
  });

  it('refuses a multi-container Pod that does not name its engine container', () => {
    assert.match(
      refused(optedInPod([vllm, { name: 'sidecar', image: 'busybox' }])),
      /kvcache\.gpustack\.ai\/container\] is required when a Pod has several containers: name the engine container/,
    );
    const named = optedInPod([{ name: 'sidecar', image: 'busybox' }, vllm], {
      'kvcache.gpustack.ai/container': 'vllm',
    });
    assert.equal(op(accepted(named), '/spec/containers/1')?.op, 'replace');
  });

  it('refuses an init container named as the engine container', () => {
    const p = optedInPod([vllm], { 'kvcache.gpustack.ai/container': 'warmup' });
    p.spec.initContainers = [{ name: 'warmup', command: ['vllm', 'serve', 'x'] }];
    assert.match(
      refused(p),
      /kvcache\.gpustack\.ai\/container\]: warmup is an init container; name an app container/,
    );
  });
});

describe('planPodInjection: the container', () => {
  it('refuses sh -c, asking for the entry point directly', () => {
    const shell = { name: 'vllm', command: ['sh', '-c', 'vllm serve Qwen/Qwen2.5-7B-Instruct'] };
    assert.match(
      refused(optedInPod([shell])),
      /^spec\.containers\[0\]: sh -c runs a command string .*; call vllm directly$/,
    );
  });

  it('refuses an owned flag in args, naming where it is', () => {
    const owned = { ...vllm, args: ['--kv-cache-dtype', 'fp8'] };
    assert.match(
      refused(optedInPod([owned])),
      /^spec\.containers\[0\]\.args\[0\]: --kv-cache-dtype is owned by the operator on vLLM/,
    );
  });

  it('names the real position of an owned flag in command', () => {
    const inCommand = { name: 'vllm', command: ['vllm', 'serve', 'm', '--kv-transfer-config', '{}'] };
    assert.match(
      refused(optedInPod([inCommand])),
      /^spec\.containers\[0\]\.command\[3\]: --kv-transfer-config is owned by the operator on vLLM: the injection writes it from the Binding; remove it, or drop the kvcache\.gpustack\.ai\/inject label/,
    );
  });

  it('refuses kv_load_failure_policy in args with the rule, naming the annotation that asks for fail', () => {
    const own = { ...vllm, args: ['--port', '8000', '--kv-transfer-config.kv_load_failure_policy=fail'] };
    const onPurpose: Record<string, string> = { 'kvcache.gpustack.ai/kv-load-failure-policy': 'fail' };
    for (const annotations of [{}, onPurpose])
      assert.equal(
        refused(optedInPod([own], annotations)),
        'spec.containers[0].args[2]: --kv-transfer-config.kv_load_failure_policy sets kv_load_failure_policy to fail, which the injection writes on vLLM: recompute, so a load from the store that fails or stalls is computed again instead of failing the request with HTTP 500; remove it (a second --kv-transfer-config would replace the connector\'s), and to fail such requests on purpose annotate the Pod kvcache.gpustack.ai/kv-load-failure-policy: "fail"',
      );
  });

  it('refuses only the env the injection itself writes, with the Pod way out', () => {
    const own = { ...sglang, env: [{ name: 'SGLANG_HICACHE_MOONCAKE_CONFIG_PATH', value: '/x.json' }] };
    assert.equal(
      refused(optedInPod([own], { 'kvcache.gpustack.ai/engine': 'SGLang' })),
      'spec.containers[0].env[0]: env SGLANG_HICACHE_MOONCAKE_CONFIG_PATH is written by the injection on SGLang; remove it, or drop the kvcache.gpustack.ai/inject label to configure the cache yourself',
    );
    const other = { ...sglang, env: [{ name: 'MOONCAKE_MASTER', value: '10.0.0.1:50051' }] };
    const patch = accepted(optedInPod([other], { 'kvcache.gpustack.ai/engine': 'SGLang' }));
    const env = (op(patch, '/spec/containers/0')!.value as Container).env ?? [];
    assert.deepEqual(
      env.filter((e) => e.name === 'MOONCAKE_MASTER').map((e) => e.value),
      [clientEndpoint],
    );
  });

  it('refuses a volume named like the one the injection owns', () => {
    const p = optedInPod();
    p.spec.volumes = [{ name: 'gpustack-kvcache-config', emptyDir: {} }];
    assert.match(
      refused(p),
      /^spec\.containers\[0\]: the volume gpustack-kvcache-config and the mount path \/etc\/gpustack\/kvcache belong to the injection; rename yours$/,
    );
  });
});

describe('planPodInjection: the Binding, pool and backend', () => {
  it('refuses a Binding that does not exist, naming the namespace', () => {
    assert.match(
      refused(optedInPod(), injectionContext({ binding: undefined })),
      /KVCachePoolBinding team-a does not exist in namespace team-a/,
    );
  });

  it('refuses a Binding being deleted', () => {
    const deleting = binding('team-a', 'team-a', { deleting: true });
    assert.match(
      refused(optedInPod(), injectionContext({ binding: deleting })),
      /KVCachePoolBinding team-a\/team-a is being deleted; use another Binding/,
    );
  });

  it('refuses while the pool cannot say whether its master keeps a ledger', () => {
    const unreported = pool('shared-dram', { status: { phase: 'Provisioning', clientEndpoint } });
    assert.match(
      refused(optedInPod(), injectionContext({ pool: unreported })),
      /QuotaLedgerAvailable not reported yet\); retry once the pool is Ready/,
    );
    const outage = readyPool(
      cond('QuotaLedgerAvailable', 'False', 'LedgerUnreachable', 'connect ECONNREFUSED'),
    );
    assert.match(
      refused(optedInPod(), injectionContext({ pool: outage })),
      /QuotaLedgerAvailable LedgerUnreachable: connect ECONNREFUSED/,
    );
  });

  it('refuses a pool that publishes no clientEndpoint', () => {
    const noEndpoint = pool('shared-dram', {
      status: { conditions: [cond('QuotaLedgerAvailable', 'True', 'Available')] },
    });
    assert.match(
      refused(optedInPod(), injectionContext({ pool: noEndpoint })),
      /^pool shared-dram publishes no clientEndpoint yet; retry once its backend is Ready$/,
    );
  });

  it('refuses a backend whose member groups use two transports', () => {
    const mixed = backend('mooncake-dram', {
      groups: [group({ transport: { protocol: 'RDMA' } }), group({ transport: { protocol: 'TCP' } })],
    });
    assert.match(
      refused(optedInPod(), injectionContext({ backend: mixed })),
      /^pool shared-dram is served on several transports \(rdma, tcp\) and the engine cannot pick one/,
    );
  });
});

describe('frozenKeyRefusal', () => {
  const created = optedInPod([vllm], { 'kvcache.gpustack.ai/injected': '{"binding":"team-a"}' });

  it('lets other metadata change', () => {
    const edited = structuredClone(created);
    edited.metadata.labels!.team = 'a';
    assert.equal(frozenKeyRefusal(created, edited), undefined);
  });

  it('refuses removing the opt-in label, pointing at the Pod template', () => {
    const edited = structuredClone(created);
    delete edited.metadata.labels!['kvcache.gpustack.ai/inject'];
    assert.match(
      frozenKeyRefusal(created, edited)!,
      /inject\] is fixed once the Pod exists; to stop injecting, change the Pod template/,
    );
  });

  it('refuses editing or removing a written annotation', () => {
    const edited = structuredClone(created);
    delete edited.metadata.annotations!['kvcache.gpustack.ai/injected'];
    assert.match(
      frozenKeyRefusal(created, edited)!,
      /injected\] is written by the injection webhook at creation/,
    );
  });
});

describe('planPodInjection: the store tenant', () => {
  it('refuses MOONCAKE_TENANT_ID on an opted-in Pod of either engine: the injection writes the tenant', () => {
    const named = (c: Container) => ({ ...c, env: [{ name: 'MOONCAKE_TENANT_ID', value: 'team-b' }] });
    const why =
      "env MOONCAKE_TENANT_ID names the store tenant, which is the Binding's domain and which the injection writes (vLLM: tenant_id in the client config; SGLang: this variable), so another value could read another team's cache; remove it";
    assert.equal(refused(optedInPod([named(vllm)])), `spec.containers[0].env[0]: ${why}`);
    assert.equal(
      refused(optedInPod([named(sglang)], { 'kvcache.gpustack.ai/engine': 'SGLang' })),
      `spec.containers[0].env[0]: ${why}`,
    );
  });
});
