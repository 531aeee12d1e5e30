// A ModelDeployment's Deployments and Services, pinned as golden files: the exact intent the operator
// applies. Regenerate after an intended change with UPDATE_GOLDEN=1 and review the diff.

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Container as CoreContainer, PodSpec } from 'kubernetes-types/core/v1.js';
import type { ModelDeploymentRole, ModelDeploymentSpec } from '../../src/api/model-deployment.ts';
import type { ModelDeployment } from '../../src/api/types.ts';
import {
  type ModelDeploymentRenderContext,
  renderModelDeployment,
} from '../../src/controllers/modeldeployment/render.ts';
import { templateHashAnnotation } from '../../src/controllers/modeldeployment/render-labels.ts';
import { scaleQuantity } from '../../src/controllers/modeldeployment/render-resources.ts';
import type { CacheConnection } from '../../src/inject/types.ts';
import { sha256Hex } from '../../src/kube/canonical-json.ts';
import { a10g, instanceType, modelDeployment, runnerImage } from '../builders/index.ts';
import { goldenTests } from './golden.ts';

const goldenDir = new URL('./golden/modeldeployment/', import.meta.url);

// What these tests read of a rendered role: its engine container always has a command.
type Container = CoreContainer & { command: string[] };
type Template = {
  metadata: { labels: Record<string, string>; annotations: Record<string, string> };
  spec: PodSpec & { containers: Container[] };
};

const local = instanceType('local', { acceleratable: false });

function md(name: string, spec: Partial<ModelDeploymentSpec>, roles: ModelDeploymentRole[]): ModelDeployment {
  return modelDeployment(name, {
    metadata: { uid: `uid-${name}` },
    spec: {
      engine: { name: 'vLLM', image: runnerImage },
      kvCache: { poolRef: { name: 'team-a' }, connector: 'Mooncake' },
      ...spec,
    },
    roles,
  });
}

// Role defaults written out, as the apiserver stores them.
function role(instanceTypeName: string, change: Partial<ModelDeploymentRole> = {}): ModelDeploymentRole {
  return {
    name: 'server',
    kind: 'Server',
    replicas: 1,
    size: 1,
    instanceType: instanceTypeName,
    resources: { accelerator: '1' },
    ...change,
  };
}

function connection(binding: string, domain: CacheConnection['domain']): CacheConnection {
  return {
    binding,
    pool: 'shared-dram',
    domain,
    masterAddress: 'mooncake-dram-leader.gpustack-system.svc:50051',
    protocol: 'tcp',
    tenantInjected: true,
  };
}

const teamA = connection('team-a', { name: 'default', blockSize: 64, dtype: 'bfloat16' });
const qwenFp8 = connection('qwen-fp8', { name: 'qwen-fp8-v1', blockSize: 16, dtype: 'fp8_e4m3' });
const instanceTypes = new Map([local, a10g].map((t) => [t.metadata.name!, t]));
const ctx = (conn: CacheConnection | undefined): ModelDeploymentRenderContext => ({
  instanceTypes,
  connection: conn,
  dtypeOwned: true,
  overcommit: true,
  runtimeVersions: new Map([['nvidia-a10g', '12.9']]),
});

const step3 = md('qwen-chat', {}, [role('local', { replicas: 2 })]);
const step3Nvidia = md('qwen-chat', {}, [role('nvidia-a10g', { replicas: 2 })]);
const step6 = md('qwen-chat-fp8', { kvCache: { poolRef: { name: 'qwen-fp8' }, connector: 'Mooncake' } }, [
  role('local'),
]);
const sglang = md('qwen-sglang', { engine: { name: 'SGLang', version: '0.5.18' } }, [
  role('nvidia-a10g', {
    ports: [{ port: 30000, protocol: 'TCP' }],
    extraArgs: ['--mem-fraction-static', '0.8'],
    env: [{ name: 'MC_TE_METRIC', value: '0' }],
  }),
]);
const noCache = md('qwen-plain', { kvCache: undefined }, [
  role('local', { extraArgs: ['--max-model-len', '4096'] }),
]);
const takeOver = md('qwen-own', {}, [
  role('local', {
    command: ['bash', '-c', 'exec vllm serve /models/qwen --port 8000'],
    env: [{ name: 'HF_HUB_OFFLINE', value: '1' }],
    terminationGracePeriodSeconds: 60,
  }),
]);

const goldens: Record<string, [ModelDeployment, ModelDeploymentRenderContext]> = {
  'step-3-workload': [step3, ctx(teamA)],
  'step-3-nvidia': [step3Nvidia, { ...ctx(teamA), overcommit: false }],
  'step-6-fp8': [step6, ctx(qwenFp8)],
  'sglang-cache': [sglang, ctx(teamA)],
  'no-kv-cache': [noCache, ctx(undefined)],
  'connection-pending': [step3, ctx(undefined)],
  'take-over': [takeOver, ctx(teamA)],
};

function template(m: ModelDeployment, c: ModelDeploymentRenderContext, index = 0): Template {
  return renderModelDeployment(m, c).deployments[index]?.spec?.template as Template;
}

function engine(m: ModelDeployment, c: ModelDeploymentRenderContext): Container {
  return template(m, c).spec.containers[0]!;
}

function after(argv: string[], flag: string): string | undefined {
  const i = argv.indexOf(flag);
  return i < 0 ? undefined : argv[i + 1];
}

describe('ModelDeployment render goldens', () => {
  goldenTests(goldenDir, goldens, ([m, c]) => renderModelDeployment(m, c));
});

describe('ModelDeployment workloads', () => {
  it('renders one Deployment per role and the Services <md> and <md>-<role>', () => {
    const out = renderModelDeployment(step3, ctx(teamA));
    assert.deepEqual(
      out.deployments.map((d) => d.metadata.name),
      ['qwen-chat-server'],
    );
    assert.deepEqual(
      out.services.map((s) => s.metadata.name),
      ['qwen-chat', 'qwen-chat-server'],
    );
    assert.equal(out.deployments[0]?.spec?.replicas, 2);
    assert.deepEqual(out.deployments[0]!.metadata.ownerReferences?.[0]?.controller, true);
  });

  it('serves the engine on 0.0.0.0 and the role port under the model name', () => {
    const argv = engine(sglang, ctx(teamA)).command;
    assert.deepEqual(argv.slice(0, 5), [
      'python3',
      '-m',
      'sglang.launch_server',
      '--model-path',
      'Qwen/Qwen2.5-7B-Instruct',
    ]);
    assert.equal(after(argv, '--host'), '0.0.0.0');
    assert.equal(after(argv, '--port'), '30000');
    assert.equal(after(argv, '--served-model-name'), 'Qwen/Qwen2.5-7B-Instruct');
  });

  it('leaves host and port to extraArgs that set them', () => {
    const own = md('own-port', { kvCache: undefined }, [
      role('local', { extraArgs: ['--port=8000', '--host', '::'] }),
    ]);
    const argv = engine(own, ctx(undefined)).command;
    assert.equal(argv.filter((a) => a.startsWith('--port')).length, 1);
    assert.equal(argv.filter((a) => a === '--host').length, 1);
    assert.equal(
      engine(own, ctx(undefined)).startupProbe,
      undefined,
      'a user-chosen host may be unreachable',
    );
  });

  it('renders the Binding dtype and block size onto the fp8 deployment (Step 6)', () => {
    const argv = engine(step6, ctx(qwenFp8)).command;
    assert.equal(after(argv, '--kv-cache-dtype'), 'fp8_e4m3');
    assert.equal(after(argv, '--block-size'), '16');
  });

  it('renders no dtype when the Setting does not own it, but keeps the block size', () => {
    const argv = engine(step6, { ...ctx(qwenFp8), dtypeOwned: false }).command;
    assert.equal(argv.includes('--kv-cache-dtype'), false);
    assert.equal(after(argv, '--block-size'), '16');
  });

  it('places extraArgs after the injected flags', () => {
    const argv = engine(sglang, ctx(teamA)).command;
    assert.ok(argv.indexOf('--page-size') < argv.indexOf('--mem-fraction-static'));
    assert.deepEqual(argv.slice(-2), ['--mem-fraction-static', '0.8']);
  });

  it('renders no Mooncake key at all without a kvCache or without a resolved connection', () => {
    for (const rendered of [
      renderModelDeployment(noCache, ctx(teamA)),
      renderModelDeployment(step3, ctx(undefined)),
    ]) {
      const text = JSON.stringify(rendered);
      for (const key of [
        'MOONCAKE',
        'kv-transfer-config',
        'kvcache.gpustack.ai',
        '--block-size',
        '--kv-cache-dtype',
      ])
        assert.equal(text.includes(key), false, `${key} rendered`);
    }
  });

  it('runs a take-over argv verbatim, without probes, defaults or injection', () => {
    const c = engine(takeOver, ctx(teamA));
    assert.deepEqual(c.command, ['bash', '-c', 'exec vllm serve /models/qwen --port 8000']);
    assert.deepEqual(c.env, [{ name: 'HF_HUB_OFFLINE', value: '1' }]);
    assert.equal(c.startupProbe, undefined);
    assert.deepEqual(template(takeOver, ctx(teamA)).metadata.annotations, {
      [templateHashAnnotation]: template(takeOver, ctx(teamA)).metadata.annotations[templateHashAnnotation],
    });
  });

  it('lets the user value of MC_TE_METRIC win', () => {
    const env = engine(sglang, ctx(teamA)).env!;
    assert.deepEqual(
      env.filter((e) => e.name === 'MC_TE_METRIC'),
      [{ name: 'MC_TE_METRIC', value: '0' }],
    );
  });

  it('runs vLLM on an Ascend type with the Ascend store connector', () => {
    const ascend = instanceType('ascend-910b', {
      acceleratable: true,
      acceleratorGroup: 'ascend-910b',
      manufacturer: 'ascend',
      unitResources: { cpu: '8', ram: '64Gi' },
    });
    const m = md('qwen-npu', {}, [role('ascend-910b')]);
    const c = engine(m, { ...ctx(teamA), instanceTypes: new Map([['ascend-910b', ascend]]) });
    assert.match(after(c.command, '--kv-transfer-config')!, /"AscendStoreConnector"/);
    assert.deepEqual((c.resources as { limits: object }).limits, {
      cpu: '8',
      memory: '64Gi',
      'huawei.com/npu': '1',
    });
  });

  it('recomputes a failed or stalled load, and fails it only for a deployment annotated so', () => {
    const policyOf = (m: ModelDeployment) =>
      JSON.parse(after(engine(m, ctx(teamA)).command, '--kv-transfer-config')!).kv_load_failure_policy;
    assert.equal(policyOf(step3), 'recompute');
    const annotated = (value: string) => ({
      ...step3,
      metadata: { ...step3.metadata, annotations: { 'kvcache.gpustack.ai/kv-load-failure-policy': value } },
    });
    assert.equal(policyOf(annotated('fail')), 'fail');
    assert.equal(policyOf(annotated('recompute')), 'recompute');
    assert.equal(
      policyOf(annotated('sometimes')),
      'recompute',
      'admission refuses it; never fail by accident',
    );
  });

  it('tells the Prefill and Decode roles their kind in the connector', () => {
    const pd = md('qwen-pd', {}, [
      role('local', { name: 'prefill', kind: 'Prefill' }),
      role('local', { name: 'decode', kind: 'Decode' }),
    ]);
    const roleOf = (i: number) =>
      JSON.parse(after(template(pd, ctx(teamA), i).spec.containers[0]!.command, '--kv-transfer-config')!)
        .kv_role;
    assert.equal(roleOf(0), 'kv_producer');
    assert.equal(roleOf(1), 'kv_consumer');
    assert.equal(
      template(pd, ctx(teamA), 1).metadata.labels['modeldeployment.gpustack.ai/role-kind'],
      'decode',
    );
  });

  it('hashes the template without its own hash annotation', () => {
    const t = template(step3, ctx(teamA));
    const { [templateHashAnnotation]: hash, ...annotations } = t.metadata.annotations;
    assert.equal(hash, sha256Hex({ metadata: { labels: t.metadata.labels, annotations }, spec: t.spec }));
    assert.notEqual(hash, template(step3, ctx(undefined)).metadata.annotations[templateHashAnnotation]);
  });

  it('refuses to render what it cannot: a missing InstanceType, size above 1, no image or version', () => {
    assert.throws(
      () => renderModelDeployment(md('x', {}, [role('gone')]), ctx(teamA)),
      /InstanceType gone does not exist/,
    );
    assert.throws(
      () => renderModelDeployment(md('x', {}, [role('local', { size: 2 })]), ctx(teamA)),
      /size 2 is not supported/,
    );
    assert.throws(
      () => renderModelDeployment(md('x', { engine: { name: 'vLLM' } }, [role('local')]), ctx(teamA)),
      /spec.engine.version/,
    );
  });

  it('names the default image with the runner tag: backend, runtime version, engine and version', () => {
    const m = md('x', { engine: { name: 'vLLM', version: '0.29.0' } }, [role('nvidia-a10g')]);
    assert.equal(engine(m, ctx(teamA)).image, 'gpustack/runner:cuda12.9-vllm0.29.0');
    const s = md('x', { engine: { name: 'SGLang', version: '0.5.18' } }, [role('nvidia-a10g')]);
    assert.equal(engine(s, ctx(teamA)).image, 'gpustack/runner:cuda12.9-sglang0.5.18');
  });

  it('refuses to render a default image it cannot tag, naming the image fields', () => {
    const versioned = (r: ModelDeploymentRole) =>
      md('x', { engine: { name: 'vLLM', version: '0.29.0' } }, [r]);
    assert.throws(
      () =>
        renderModelDeployment(versioned(role('nvidia-a10g')), { ...ctx(teamA), runtimeVersions: new Map() }),
      /^Error: role server: no node of InstanceType nvidia-a10g \(label acceleratable\.feature\.gpustack\.ai\/nvidia-a10g=true\) reports acceleratable\.feature\.gpustack\.ai\/nvidia\.runtime-version, so no gpustack\/runner tag can be formed; label the nodes, or set spec\.roles\[\]\.image \(role server\) or spec\.engine\.image$/,
    );
  });
});

describe('the rights engine Pods run with', () => {
  const baselineRule =
    "the operator creates engine Pods with its own rights, so a ModelDeployment may not ask for what Pod Security 'baseline' forbids";

  it('mounts no service account token unless the role asks for one', () => {
    for (const [name, [m, c]] of Object.entries(goldens))
      for (const d of renderModelDeployment(m, c).deployments)
        assert.equal(d.spec?.template.spec?.automountServiceAccountToken, false, name);
    const asking = md('x', {}, [role('local', { automountServiceAccountToken: true })]);
    assert.equal(template(asking, ctx(teamA)).spec.automountServiceAccountToken, true);
    assert.notEqual(
      template(asking, ctx(teamA)).metadata.annotations[templateHashAnnotation],
      template(step3, ctx(teamA)).metadata.annotations[templateHashAnnotation],
    );
  });

  it('renders no host namespace, host port, host path or container privilege from any role field', () => {
    const everything = md('x', {}, [
      role('local', {
        privileged: false,
        imagePullPolicy: 'IfNotPresent',
        imagePullSecrets: [{ name: 'registry' }],
        ports: [{ port: 8000 }, { port: 9000, protocol: 'UDP' }],
        additionalVolumes: [
          { name: 'weights', persistentVolumeClaim: { claimName: 'weights' }, mountPath: '/models' },
        ],
        shmSize: '1Gi',
        env: [{ name: 'HF_HUB_OFFLINE', value: '1' }],
      }),
    ]);
    const t = template(everything, ctx(teamA));
    for (const key of ['hostNetwork', 'hostPID', 'hostIPC', 'securityContext'] as const)
      assert.equal(t.spec[key], undefined, key);
    assert.equal(t.spec.containers[0]!.securityContext, undefined);
    assert.ok(t.spec.containers[0]!.ports!.every((p) => p.hostPort === undefined));
    assert.ok(t.spec.volumes!.every((v) => v.hostPath === undefined));
  });

  it('refuses to render a privileged role or a hostPath volume stored before admission refused them', () => {
    const escalated = (change: Partial<ModelDeploymentRole>) => md('x', {}, [role('local', change)]);
    assert.throws(
      () => renderModelDeployment(escalated({ privileged: true }), ctx(teamA)),
      (err: Error) => err.message.startsWith(`role server: spec.roles[0].privileged: ${baselineRule}; `),
    );
    const node = { name: 'node', hostPath: { path: '/' }, mountPath: '/host' };
    assert.throws(
      () => renderModelDeployment(escalated({ additionalVolumes: [node] }), ctx(teamA)),
      (err: Error) =>
        err.message.startsWith(`role server: spec.roles[0].additionalVolumes[0].hostPath: ${baselineRule}; `),
    );
  });
});

describe('role resources', () => {
  it('multiplies unit CPU and RAM by the cards and requests little under overcommit', () => {
    assert.deepEqual(engine(step3, ctx(teamA)).resources, {
      limits: { cpu: '1', memory: '2Gi' },
      requests: { cpu: '100m', memory: '128Mi' },
    });
    const two = md('x', {}, [role('nvidia-a10g', { resources: { accelerator: '2' } })]);
    assert.deepEqual(engine(two, ctx(teamA)).resources, {
      limits: { cpu: '16', memory: '64Gi', 'nvidia.com/gpu': '2' },
      requests: { cpu: '200m', memory: '256Mi' },
    });
  });

  it('requests what it limits without overcommit, and one card by default on an acceleratable type', () => {
    const m = md('x', {}, [role('nvidia-a10g', { resources: undefined })]);
    const limits = { cpu: '8', memory: '32Gi', 'nvidia.com/gpu': '1' };
    assert.deepEqual(engine(m, { ...ctx(teamA), overcommit: false }).resources, { limits, requests: limits });
  });

  it('scales quantities exactly, keeping their suffix', () => {
    assert.equal(scaleQuantity('2Gi', 3), '6Gi');
    assert.equal(scaleQuantity('500m', 2), '1000m');
    assert.equal(scaleQuantity('1.5', 2), '3');
    assert.equal(scaleQuantity('0.25', 1), '0.25');
    assert.equal(scaleQuantity(4, 2), '8');
  });
});
