// ModelDeployment admission of its roles: engines on CPU-only InstanceTypes, the roles' shape, the
// default image and the ports the engine's Pod reserves.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ModelDeploymentRole } from '../../src/api/model-deployment.ts';
import type { InstanceType, ModelDeployment } from '../../src/api/types.ts';
import { validateModelDeployment } from '../../src/webhooks/modeldeployment-rules.ts';
import { a10g, md, modelDeploymentContext } from '../builders/index.ts';
import { errorsOf } from '../support/admission-verdicts.ts';

describe('validateModelDeployment: engines on CPU-only InstanceTypes', () => {
  const cpu: InstanceType = {
    ...a10g,
    metadata: { name: 'cpu' },
    spec: { ...a10g.spec, acceleratable: false, unitResources: { cpu: '1', ram: '6Gi' } },
  };
  const onCpu = (blockSize: number) =>
    modelDeploymentContext({ instanceTypes: new Map([['cpu', cpu]]), domainBlockSize: blockSize });

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
    assert.deepEqual(errorsOf(md(), undefined, modelDeploymentContext({ domainBlockSize: 16 })), []);
    assert.deepEqual(errorsOf(md({ instanceType: 'cpu' }, { engine: 'SGLang' }), undefined, onCpu(16)), []);
    assert.deepEqual(errorsOf(md({ instanceType: 'cpu' }, { kvCache: false }), undefined, onCpu(16)), []);
  });
});

describe('validateModelDeployment: roles', () => {
  it('refuses more than one Pod per replica', () => {
    assert.deepEqual(errorsOf(md({ size: 2 })), [
      'spec.roles[0].size: 2 Pods per replica is not supported by this operator; use size 1 and scale with replicas',
    ]);
  });

  it('warns when the InstanceType does not exist yet', () => {
    const f = validateModelDeployment(md({ instanceType: 'h100' }), undefined, modelDeploymentContext());
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
    const ctx = modelDeploymentContext({ instanceTypes: new Map([['mlu', mlu]]) });
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
