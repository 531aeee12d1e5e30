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
  opts: { engine?: 'vLLM' | 'SGLang'; kvCache?: boolean; finalizers?: string[] } = {},
): ModelDeployment {
  return {
    apiVersion: 'worker.gpustack.ai/v1',
    kind: 'ModelDeployment',
    metadata: { name: 'chat', namespace: 'team-a', finalizers: opts.finalizers ?? [] },
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
