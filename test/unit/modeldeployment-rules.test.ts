// ModelDeployment admission beyond the CRD schema (KV-cache spec §3.4, §8): owned cache keys refused in
// every spelling with the way out, transports the engine cannot choose between, and a finalizer-only
// update that is never refused.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ModelDeploymentRole } from '../../src/api/model-deployment.ts';
import type { InstanceType, ModelDeployment } from '../../src/api/types.ts';
import {
  type ModelDeploymentAdmissionContext,
  validateModelDeployment,
} from '../../src/webhooks/modeldeployment-rules.ts';

const a10g: InstanceType = {
  apiVersion: 'worker.gpustack.ai/v1',
  kind: 'InstanceType',
  metadata: { name: 'nvidia-a10g' },
  spec: {
    acceleratable: true,
    acceleratorGroup: 'nvidia-a10g',
    manufacturer: 'nvidia',
    os: 'linux',
    arch: 'amd64',
    unitResources: { cpu: '8', ram: '32Gi' },
    localStorage: '100Gi',
  },
};

const context = (over: Partial<ModelDeploymentAdmissionContext> = {}): ModelDeploymentAdmissionContext => ({
  dtypeOwned: true,
  instanceTypes: new Map([['nvidia-a10g', a10g]]),
  ...over,
});

function md(
  role: Partial<ModelDeploymentRole> = {},
  opts: {
    engine?: 'vLLM' | 'SGLang';
    kvCache?: boolean;
    finalizers?: string[];
    annotations?: Record<string, string>;
  } = {},
): ModelDeployment {
  return {
    apiVersion: 'worker.gpustack.ai/v1',
    kind: 'ModelDeployment',
    metadata: {
      name: 'chat',
      namespace: 'team-a',
      finalizers: opts.finalizers ?? [],
      ...(opts.annotations ? { annotations: opts.annotations } : {}),
    },
    spec: {
      model: { name: 'Qwen/Qwen2.5-7B-Instruct' },
      engine: { name: opts.engine ?? 'vLLM', version: '0.29.0' },
      ...(opts.kvCache === false ? {} : { kvCache: { poolRef: { name: 'team-a' } } }),
      roles: [{ name: 'server', instanceType: 'nvidia-a10g', ...role }],
    },
  };
}

const errorsOf = (obj: ModelDeployment, old?: ModelDeployment, ctx = context()) =>
  validateModelDeployment(obj, old, ctx).errors;

describe('validateModelDeployment: owned cache keys', () => {
  it('admits a deployment that leaves the cache keys to the operator', () => {
    assert.deepEqual(
      validateModelDeployment(md({ extraArgs: ['--max-model-len', '4096'] }), undefined, context()),
      {
        errors: [],
        warnings: [],
      },
    );
  });

  it('refuses --kv-transfer-config in extraArgs, naming the key, engine and roles[].command', () => {
    const errors = errorsOf(md({ extraArgs: ['--kv-transfer-config', '{}'] }));
    assert.equal(errors.length, 1);
    assert.match(
      errors[0]!,
      /^spec\.roles\[0\]\.extraArgs\[0\]: --kv-transfer-config is owned by the operator on vLLM: .*roles\[\]\.command/,
    );
  });

  it('refuses the vLLM spellings of an owned flag: underscore, dotted field and unique prefix', () => {
    for (const arg of ['--kv_transfer_config={}', '--kv-transfer-config.kv_role=kv_both', '--kv-transfer']) {
      const errors = errorsOf(md({ extraArgs: [arg] }));
      assert.equal(errors.length, 1, arg);
      assert.match(errors[0]!, /read by the engine as --kv-transfer-config/, arg);
    }
  });

  it('refuses owned SGLang env, saying why the tenant id matters', () => {
    const errors = errorsOf(
      md({ env: [{ name: 'MOONCAKE_TENANT_ID', value: 'other-team' }] }, { engine: 'SGLang' }),
    );
    assert.equal(errors.length, 1);
    assert.match(
      errors[0]!,
      /^spec\.roles\[0\]\.env\[0\]: env MOONCAKE_TENANT_ID is owned by the operator on SGLang/,
    );
    assert.match(errors[0]!, /could read another team's cache/);
  });

  it('refuses --kv-cache-dtype while spec.kvCache is set, pointing at the Binding’s domain.dtype', () => {
    const errors = errorsOf(md({ extraArgs: ['--kv-cache-dtype=fp8'] }));
    assert.equal(errors.length, 1);
    assert.match(errors[0]!, /--kv-cache-dtype is owned .*spec\.domain\.dtype/);
  });

  it('admits --kv-cache-dtype without spec.kvCache, with the Setting off, or on a take-over role', () => {
    const dtype = { extraArgs: ['--kv-cache-dtype', 'fp8'] };
    assert.deepEqual(errorsOf(md(dtype, { kvCache: false })), []);
    assert.deepEqual(errorsOf(md(dtype), undefined, context({ dtypeOwned: false })), []);
    assert.deepEqual(errorsOf(md({ ...dtype, command: ['vllm', 'serve', 'Qwen/Qwen2.5-7B-Instruct'] })), []);
  });
});

describe('validateModelDeployment: a stored deployment with an owned flag', () => {
  const stored = md({ extraArgs: ['--kv-cache-dtype', 'fp8'] }, { finalizers: ['worker.gpustack.ai/lock'] });

  it('never refuses the metadata-only update that removes the finalizer', () => {
    const released = { ...stored, metadata: { ...stored.metadata, finalizers: [] } };
    assert.deepEqual(validateModelDeployment(released, stored, context()), { errors: [], warnings: [] });
  });

  it('refuses its next spec update, naming the flag', () => {
    const scaled = md({ extraArgs: ['--kv-cache-dtype', 'fp8'], replicas: 3 });
    assert.match(errorsOf(scaled, stored)[0]!, /extraArgs\[0\]: --kv-cache-dtype is owned/);
  });
});

describe('validateModelDeployment: kv_load_failure_policy', () => {
  const policy = 'kvcache.gpustack.ai/kv-load-failure-policy';
  const onPurpose = { annotations: { [policy]: 'fail' } };
  const failing =
    '{"kv_connector":"MooncakeStoreConnector","kv_role":"kv_both","kv_load_failure_policy":"fail"}';
  const takeOver = (...flags: string[]) => ({ command: ['vllm', 'serve', 'm', ...flags] });

  it('refuses it in extraArgs with the rule, and names the annotation that asks for fail on purpose', () => {
    for (const args of [
      ['--kv-transfer-config.kv_load_failure_policy=fail'],
      ['--kv_transfer_config.kv_load_failure_policy', 'fail'],
      ['--kv-transfer-config', failing],
    ]) {
      const errors = errorsOf(md({ extraArgs: args }));
      assert.equal(errors.length, 1, args.join(' '));
      assert.match(
        errors[0]!,
        /^spec\.roles\[0\]\.extraArgs\[0\]: \S+ sets kv_load_failure_policy to fail, which the operator writes on vLLM: recompute, so a load from the store that fails or stalls is computed again instead of failing the request with HTTP 500; remove it \(a second --kv-transfer-config would replace the connector's\), and to fail such requests on purpose annotate the ModelDeployment kvcache\.gpustack\.ai\/kv-load-failure-policy: "fail"$/,
        args.join(' '),
      );
    }
    assert.match(
      errorsOf(md({ extraArgs: ['--kv-transfer-config.kv_load_failure_policy=recompute'] }))[0]!,
      /sets kv_load_failure_policy to recompute, which the operator writes on vLLM: recompute/,
    );
    assert.equal(
      errorsOf(md({ extraArgs: ['--kv-transfer-config.kv_load_failure_policy=fail'] }, onPurpose)).length,
      1,
    );
  });

  it('refuses fail in a take-over role’s own --kv-transfer-config unless the deployment says it is on purpose', () => {
    assert.deepEqual(errorsOf(md(takeOver('--kv-transfer-config', failing))), [
      `spec.roles[0].command[4]: kv_load_failure_policy fail makes vLLM answer the request with HTTP 500 when its load from the store fails or stalls (a busy member, an object whose lease ran out); set it to recompute, or annotate the ModelDeployment ${policy}: "fail" if failing is intended`,
    ]);
    assert.match(
      errorsOf(
        md(
          takeOver(
            '--kv-transfer-config.kv_connector=MooncakeStoreConnector',
            '--kv_transfer_config.kv_role',
            'kv_both',
            '--kv-transfer-config.kv_load_failure_policy',
            'fail',
          ),
        ),
      )[0]!,
      /^spec\.roles\[0\]\.command\[6\]: kv_load_failure_policy fail makes vLLM/,
    );
    const fieldsWin = takeOver('--kv-transfer-config', failing, '--kv-transfer-config.kv_role=kv_both');
    assert.deepEqual(errorsOf(md(fieldsWin)), [], 'vLLM passes the fields after, replacing the whole object');
    assert.deepEqual(errorsOf(md(takeOver('--kv-transfer-config', failing), onPurpose)), []);
    const recompute = failing.replace('"fail"', '"recompute"');
    assert.deepEqual(
      validateModelDeployment(md(takeOver('--kv-transfer-config', recompute)), undefined, context()),
      {
        errors: [],
        warnings: [],
      },
    );
  });

  it('warns a take-over role whose connector leaves the policy to vLLM’s default, fail', () => {
    const { warnings } = validateModelDeployment(
      md(takeOver('--kv-transfer-config={"kv_connector":"MooncakeStoreConnector","kv_role":"kv_both"}')),
      undefined,
      context(),
    );
    assert.deepEqual(warnings, [
      'spec.roles[0].command[3]: --kv-transfer-config names a connector but no kv_load_failure_policy, so vLLM fails the request when a load from the store fails or stalls (its default is fail); add "kv_load_failure_policy":"recompute"',
    ]);
  });

  it('refuses an annotation that names no policy, and the annotation on SGLang', () => {
    assert.deepEqual(errorsOf(md({}, { annotations: { [policy]: 'Fail' } })), [
      `metadata.annotations[${policy}]: "Fail" is not a policy; set "fail" to fail a request whose load from the store fails or stalls, or remove it (the operator writes recompute)`,
    ]);
    assert.deepEqual(errorsOf(md({}, { engine: 'SGLang', ...onPurpose })), [
      `metadata.annotations[${policy}] applies to vLLM only (SGLang computes what a slow or failed prefetch from the store does not bring, and has no failing policy); remove it`,
    ]);
    assert.deepEqual(errorsOf(md({}, { annotations: { [policy]: 'recompute' } })), []);
  });

  it('judges an annotation-only edit, and still never a finalizer-only one', () => {
    const stored = md({}, { finalizers: ['worker.gpustack.ai/lock'] });
    const annotated = md(
      {},
      { finalizers: ['worker.gpustack.ai/lock'], annotations: { [policy]: 'always' } },
    );
    assert.match(errorsOf(annotated, stored)[0]!, /"always" is not a policy/);
    const takenOver = md(takeOver('--kv-transfer-config', failing), { ...onPurpose, finalizers: ['x'] });
    const withdrawn = md(takeOver('--kv-transfer-config', failing), { finalizers: ['x'] });
    assert.match(errorsOf(withdrawn, takenOver)[0]!, /command\[4\]: kv_load_failure_policy fail/);
    const released = { ...takenOver, metadata: { ...takenOver.metadata, finalizers: [] } };
    assert.deepEqual(errorsOf(released, takenOver), []);
  });
});

describe('validateModelDeployment: transports of the pool', () => {
  it('refuses a new Binding on a pool with several transports, naming each', () => {
    const errors = errorsOf(md(), undefined, context({ poolProtocols: ['rdma', 'tcp'] }));
    assert.deepEqual(errors, [
      'spec.kvCache.poolRef: KVCachePoolBinding team-a is served by member groups on several transports (rdma, tcp), and vLLM cannot pick one; use a Binding on a pool whose backend uses one transport',
    ]);
  });

  it('keeps an existing deployment editable when its pool later mixes transports', () => {
    const old = md();
    const edited = md({ replicas: 2 });
    assert.deepEqual(errorsOf(edited, old, context({ poolProtocols: ['rdma', 'tcp'] })), []);
    assert.deepEqual(errorsOf(md(), undefined, context({ poolProtocols: ['tcp'] })), []);
  });
});

describe('validateModelDeployment: engines on CPU-only InstanceTypes', () => {
  const cpu: InstanceType = {
    ...a10g,
    metadata: { name: 'cpu' },
    spec: { ...a10g.spec, acceleratable: false, unitResources: { cpu: '1', ram: '6Gi' } },
  };
  const onCpu = (blockSize: number) =>
    context({ instanceTypes: new Map([['cpu', cpu]]), domainBlockSize: blockSize });

  it('refuses vLLM on a CPU with a domain whose blocks are not a multiple of 32 tokens, naming the fix', () => {
    assert.deepEqual(errorsOf(md({ instanceType: 'cpu' }), undefined, onCpu(16)), [
      "spec.roles[0].instanceType: InstanceType cpu has no accelerator, so the role runs the CPU runner, and vLLM's CPU attention needs a block size that is a multiple of 32, but KVCachePoolBinding team-a's domain cuts blocks of 16 tokens (the engine would exit at start-up); reference a Binding whose spec.domain.blockSize is a multiple of 32 (for example 64), or use an InstanceType with an accelerator",
    ]);
  });

  it('admits a multiple of 32, an accelerator, a named image, SGLang, and a deployment without a cache', () => {
    assert.deepEqual(errorsOf(md({ instanceType: 'cpu' }), undefined, onCpu(64)), []);
    assert.deepEqual(
      errorsOf(md({ instanceType: 'cpu', image: 'example/vllm:tag' }), undefined, onCpu(16)),
      [],
    );
    assert.deepEqual(errorsOf(md(), undefined, context({ domainBlockSize: 16 })), []);
    assert.deepEqual(errorsOf(md({ instanceType: 'cpu' }, { engine: 'SGLang' }), undefined, onCpu(16)), []);
    assert.deepEqual(errorsOf(md({ instanceType: 'cpu' }, { kvCache: false }), undefined, onCpu(16)), []);
  });
});

describe('validateModelDeployment: a float32 domain', () => {
  it('refuses a model dtype other than float32, since the engine keeps its KV in the model’s dtype', () => {
    const f32 = context({ domainDtype: 'float32' });
    assert.deepEqual(errorsOf(md({ extraArgs: ['--dtype', 'bfloat16'] }), undefined, f32), [
      "spec.roles[0].extraArgs: --dtype bfloat16 would make the engine's KV cache bfloat16, but KVCachePoolBinding team-a's domain is float32, which the operator renders as --dtype float32 --kv-cache-dtype auto; remove --dtype, or reference a Binding whose spec.domain.dtype is the one you want",
    ]);
    assert.deepEqual(errorsOf(md({ extraArgs: ['--dtype=float32'] }), undefined, f32), []);
    assert.deepEqual(errorsOf(md(), undefined, f32), []);
    assert.deepEqual(errorsOf(md({ extraArgs: ['--dtype', 'bfloat16'] })), []);
  });
});

describe('validateModelDeployment: roles', () => {
  it('refuses more than one Pod per replica', () => {
    assert.deepEqual(errorsOf(md({ size: 2 })), [
      'spec.roles[0].size: 2 Pods per replica is not supported by this operator; use size 1 and scale with replicas',
    ]);
  });

  it('warns when the InstanceType does not exist yet', () => {
    const f = validateModelDeployment(md({ instanceType: 'h100' }), undefined, context());
    assert.deepEqual(f.errors, []);
    assert.match(f.warnings[0]!, /^spec\.roles\[0\]\.instanceType: InstanceType h100 does not exist \(yet\)/);
  });

  it('refuses a role with no image to run, naming the three ways to give one', () => {
    const obj = md();
    obj.spec.engine = { name: 'vLLM' };
    assert.match(
      errorsOf(obj)[0]!,
      /spec\.roles\[0\]: no image to run: set spec\.roles\[0\]\.image, spec\.engine\.image, or spec\.engine\.version/,
    );
  });

  it('refuses env the operator reserves for replicas', () => {
    assert.deepEqual(errorsOf(md({ env: [{ name: 'GPUSTACK_REPLICA_SIZE', value: '2' }] })), [
      'spec.roles[0].env[0]: GPUSTACK_REPLICA_SIZE is reserved for the operator; remove it',
    ]);
  });

  it('refuses a served model name or port that contradicts the spec', () => {
    assert.match(
      errorsOf(md({ extraArgs: ['--served-model-name', 'other'] }))[0]!,
      /--served-model-name other must equal spec\.model\.name \(Qwen\/Qwen2\.5-7B-Instruct\)/,
    );
    assert.match(
      errorsOf(md({ extraArgs: ['--port=9000'], ports: [{ port: 8000 }] }))[0]!,
      /--port 9000 differs from spec\.roles\[0\]\.ports\[0\]\.port \(8000\)/,
    );
    assert.deepEqual(errorsOf(md({ extraArgs: ['--port', '8000'], ports: [{ port: 8000 }] })), []);
  });

  it('reads the flags in every spelling vLLM accepts', () => {
    assert.match(
      errorsOf(md({ extraArgs: ['--served_model_name=other'] }))[0]!,
      /--served-model-name other must equal spec\.model\.name/,
    );
  });
});

describe('validateModelDeployment: the default image', () => {
  it('refuses a role whose InstanceType no runner image is published for, naming the image fields', () => {
    const mlu: InstanceType = {
      ...a10g,
      metadata: { name: 'mlu' },
      spec: { ...a10g.spec, acceleratorGroup: 'cambricon-mlu', manufacturer: 'cambricon' },
    };
    const ctx = context({ instanceTypes: new Map([['mlu', mlu]]) });
    assert.deepEqual(errorsOf(md({ instanceType: 'mlu' }), undefined, ctx), [
      'spec.roles[0].image: gpustack/runner publishes no image for manufacturer cambricon (InstanceType mlu), so no default image can be formed; set spec.roles[0].image or spec.engine.image',
    ]);
    assert.deepEqual(errorsOf(md({ instanceType: 'mlu', image: 'example/mlu-vllm:1' }), undefined, ctx), []);
    assert.deepEqual(errorsOf(md()), [], 'nvidia has runner images');
  });
});

describe('validateModelDeployment: reserved ports', () => {
  const routed = (
    roles: Partial<ModelDeploymentRole>[],
    opts: { router?: string; kvCache?: boolean; engine?: 'vLLM' | 'SGLang' } = {},
  ): ModelDeployment => {
    const base = md({}, { kvCache: opts.kvCache ?? false, engine: opts.engine });
    return {
      ...base,
      spec: {
        ...base.spec,
        ...(opts.router ? { router: { name: opts.router as 'llm-d-router' } } : {}),
        roles: roles.map((r, i) => ({ name: `r${i}`, instanceType: 'nvidia-a10g', ...r })),
      },
    };
  };

  it('refuses 5557 and 5558 on a vLLM role under llm-d-router, naming the field', () => {
    assert.deepEqual(errorsOf(routed([{ ports: [{ port: 5557 }] }], { router: 'llm-d-router' })), [
      'spec.roles[0].ports[0].port: port 5557 is reserved for the vLLM KV event publisher under llm-d-router (tcp://*:5557, replay tcp://*:5558); serve on another port',
    ]);
    assert.match(
      errorsOf(routed([{ extraArgs: ['--port=5558'] }], { router: 'llm-d-router' }))[0]!,
      /^spec\.roles\[0\]\.extraArgs: port 5558 is reserved/,
    );
  });

  it('admits 5557 without llm-d-router, on SGLang, and on a take-over role', () => {
    assert.deepEqual(errorsOf(routed([{ ports: [{ port: 5557 }] }])), []);
    assert.deepEqual(errorsOf(routed([{ ports: [{ port: 5557 }] }], { router: 'vllm-router' })), []);
    assert.deepEqual(
      errorsOf(routed([{ ports: [{ port: 5557 }] }], { router: 'llm-d-router', engine: 'SGLang' })),
      [],
    );
    assert.deepEqual(
      errorsOf(
        routed([{ ports: [{ port: 5557 }], command: ['vllm', 'serve', 'm'] }], { router: 'llm-d-router' }),
      ),
      [],
    );
  });

  it('refuses 8998 on the prefiller of a routed or cached pair', () => {
    const pair = (prefill: Partial<ModelDeploymentRole>) => [
      { kind: 'Prefill' as const, ...prefill },
      { kind: 'Decode' as const },
    ];
    assert.deepEqual(errorsOf(routed(pair({ ports: [{ port: 8998 }] }), { router: 'vllm-router' })), [
      'spec.roles[0].ports[0].port: port 8998 is reserved for the prefiller’s KV bootstrap port in a Prefill/Decode pair; serve on another port',
    ]);
    assert.equal(errorsOf(routed(pair({ ports: [{ port: 8998 }] }), { kvCache: true })).length, 1);
    assert.deepEqual(errorsOf(routed(pair({ ports: [{ port: 8998 }] }))), [], 'neither routed nor cached');
    assert.deepEqual(
      errorsOf(
        routed([{ kind: 'Prefill' }, { kind: 'Decode', ports: [{ port: 8998 }] }], { router: 'vllm-router' }),
      ),
      [],
      'the decoder runs no bootstrap server',
    );
  });
});

describe('validateModelDeployment: what the operator would create with its own rights', () => {
  const rule =
    "the operator creates engine Pods with its own rights, so a ModelDeployment may not ask for what Pod Security 'baseline' forbids";
  const ownDeployment =
    'run such an engine as your own Deployment whose Pods carry kvcache.gpustack.ai/inject=true';
  const cache = {
    name: 'cache',
    hostPath: { path: '/var/lib/models', type: 'Directory' },
    mountPath: '/models',
  };

  it('refuses a privileged engine, naming the field, the rule and the way out', () => {
    const errors = errorsOf(md({ privileged: true }));
    assert.equal(errors.length, 1, errors.join('\n'));
    assert.ok(errors[0]!.startsWith(`spec.roles[0].privileged: ${rule}; `), errors[0]);
    assert.ok(errors[0]!.includes(ownDeployment), errors[0]);
  });

  it('refuses a hostPath volume, naming the volume by its position and a PersistentVolumeClaim instead', () => {
    const scratch = { name: 'scratch', emptyDir: {}, mountPath: '/scratch' };
    const errors = errorsOf(md({ additionalVolumes: [scratch, cache] }));
    assert.equal(errors.length, 1, errors.join('\n'));
    assert.ok(errors[0]!.startsWith(`spec.roles[0].additionalVolumes[1].hostPath: ${rule}; `), errors[0]);
    assert.match(errors[0]!, /persistentVolumeClaim/);
    assert.ok(errors[0]!.includes(ownDeployment), errors[0]);
  });

  it('refuses them on a take-over role as well: command changes the argv, not whose rights run it', () => {
    const errors = errorsOf(md({ privileged: true, command: ['vllm', 'serve', 'm'] }));
    assert.match(errors.join('\n'), /^spec\.roles\[0\]\.privileged: /);
  });

  it('admits privileged: false and the volumes baseline allows', () => {
    const volumes = [
      { name: 'scratch', emptyDir: { medium: 'Memory' }, mountPath: '/scratch' },
      {
        name: 'weights',
        persistentVolumeClaim: { claimName: 'weights' },
        mountPath: '/models',
        readOnly: true,
      },
      { name: 'conf', configMap: { name: 'engine-conf' }, mountPath: '/etc/engine' },
    ];
    assert.deepEqual(errorsOf(md({ privileged: false, additionalVolumes: volumes })), []);
  });

  it('never refuses removing the finalizer of one stored before the rule, and refuses its next spec edit', () => {
    const stored = md(
      { privileged: true, additionalVolumes: [cache] },
      { finalizers: ['worker.gpustack.ai/lock'] },
    );
    const released = { ...stored, metadata: { ...stored.metadata, finalizers: [] } };
    assert.deepEqual(validateModelDeployment(released, stored, context()), { errors: [], warnings: [] });
    const scaled = md({ privileged: true, additionalVolumes: [cache], replicas: 2 });
    assert.equal(errorsOf(scaled, stored).length, 2);
  });
});

describe('validateModelDeployment: the store tenant a role names', () => {
  const own = context({ tenant: { binding: 'team-a', domain: 'chat' } });
  const sglangTakeOver = (command: string[], env: { name: string; value: string }[] = []) =>
    md({ command, env }, { engine: 'SGLang' });
  const launch = ['python3', '-m', 'sglang.launch_server', '--hicache-storage-backend', 'mooncake'];

  it('refuses MOONCAKE_TENANT_ID on a take-over role unless it is the Binding’s domain, naming the field, the rule and the fix', () => {
    const errors = errorsOf(
      sglangTakeOver(launch, [{ name: 'MOONCAKE_TENANT_ID', value: 'team-b' }]),
      undefined,
      own,
    );
    assert.deepEqual(errors, [
      `spec.roles[0].env[0]: MOONCAKE_TENANT_ID names store tenant "team-b", but a role may use only its own Binding's domain, "chat" (KVCachePoolBinding team-a's spec.domain.name): another tenant is another team's cache; set chat, or remove it and drop roles[].command (keep your arguments in extraArgs) so that the operator writes the tenant from the Binding`,
    ]);
    assert.deepEqual(
      errorsOf(sglangTakeOver(launch, [{ name: 'MOONCAKE_TENANT_ID', value: 'chat' }]), undefined, own),
      [],
    );
  });

  it('refuses a tenant_id in a config the take-over passes inline, and one set in its shell', () => {
    const inline = [
      ...launch,
      '--hicache-storage-backend-extra-config',
      '{"master_server_address": "mooncake-dram-leader.gpustack-system.svc:50051", "tenant_id": "team-b"}',
    ];
    assert.match(
      errorsOf(sglangTakeOver(inline), undefined, own).join('\n'),
      /^spec\.roles\[0\]\.command\[6\]: tenant_id names store tenant "team-b", but a role may use only/,
    );
    const shell = ['bash', '-c', 'MOONCAKE_TENANT_ID=team-b exec python3 -m sglang.launch_server'];
    assert.match(
      errorsOf(sglangTakeOver(shell), undefined, own).join('\n'),
      /^spec\.roles\[0\]\.command\[2\]: MOONCAKE_TENANT_ID names store tenant "team-b"/,
    );
    const escaped = [
      'bash',
      '-c',
      `exec vllm serve m --kv-transfer-config "{\\"tenant_id\\": \\"team-b\\"}"`,
    ];
    assert.equal(errorsOf(md({ command: escaped }), undefined, own).length, 1);
  });

  it('refuses a tenant on a take-over role without spec.kvCache, or whose Binding does not exist', () => {
    const env = [{ name: 'MOONCAKE_TENANT_ID', value: 'chat' }];
    const [none] = errorsOf(
      md({ command: launch, env }, { engine: 'SGLang', kvCache: false }),
      undefined,
      own,
    );
    assert.match(none!, /^spec\.roles\[0\]\.env\[0\]: .* no spec\.kvCache/);
    const [missing] = errorsOf(sglangTakeOver(launch, env));
    assert.match(missing!, /KVCachePoolBinding team-a does not exist, so it cannot be checked/);
  });

  it('refuses MOONCAKE_TENANT_ID on a managed vLLM role too: the tenant is written from the Binding', () => {
    const errors = errorsOf(md({ env: [{ name: 'MOONCAKE_TENANT_ID', value: 'chat' }] }), undefined, own);
    assert.equal(errors.length, 1);
    assert.match(
      errors[0]!,
      /^spec\.roles\[0\]\.env\[0\]: env MOONCAKE_TENANT_ID is owned by the operator on vLLM/,
    );
    assert.match(errors[0]!, /could read another team's cache/);
  });
});
