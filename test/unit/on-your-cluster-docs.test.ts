// docs/on-your-cluster.md says what the code does: the Kubernetes versions the chart requires and the
// tests run, the InstanceType example's resources and default image, the injection keys and what the
// webhook writes into the example Deployment's Pods, the external backend example, and the Mooncake
// lines the doctor knows. Each example on the page is the file under examples/on-your-cluster/.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import type { Pod } from 'kubernetes-types/core/v1.js';
import { parse } from 'yaml';
import { projectRoot, toolchainValue } from '../../images/toolchain.ts';
import { settingDefaults } from '../../src/api/setting.ts';
import type { InstanceType, KVCacheBackend, ModelDeployment } from '../../src/api/types.ts';
import { roleResources } from '../../src/controllers/modeldeployment/render-resources.ts';
import { injectLabel } from '../../src/inject/types.ts';
import type { KubeObject } from '../../src/kube/object.ts';
import { clientLine, storeLine } from '../../src/kubectl-kvpool/version-lines.ts';
import { engineImage, poolRuntimeVersions } from '../../src/vocabulary/runner-image.ts';
import { podInjectionHook } from '../../src/webhooks/modeldeployment.ts';
import { type AdmittedPod, planPodInjection } from '../../src/webhooks/pod-injection-rules.ts';
import { userKeys } from '../../src/webhooks/pod-injection-target.ts';
import { backend, binding, readyPool } from '../builders/index.ts';

const page = readFileSync(join(projectRoot, 'docs', 'on-your-cluster.md'), 'utf8');
const example = <T>(file: string): T =>
  parse(readFileSync(join(projectRoot, 'examples', 'on-your-cluster', file), 'utf8')) as T;

/** The page's section under `## title`. */
function section(title: string): string {
  const start = page.indexOf(`## ${title}\n`);
  assert.ok(start >= 0, `no section "${title}"`);
  const end = page.indexOf('\n## ', start + 1);
  return page.slice(start, end < 0 ? undefined : end);
}

/** The YAML blocks of a section, parsed. */
function yamlBlocks(text: string): unknown[] {
  return [...text.matchAll(/```yaml\n([\s\S]*?)```/g)].map((m) => parse(m[1]!));
}

/** Whether every key `part` sets has the same value in `whole`. */
function within(part: unknown, whole: unknown): boolean {
  if (part === null || typeof part !== 'object') return part === whole;
  if (whole === null || typeof whole !== 'object') return false;
  return Object.entries(part).every(([k, v]) => within(v, (whole as Record<string, unknown>)[k]));
}

describe('docs/on-your-cluster.md', () => {
  it('gives the Kubernetes version the tests run and the minimum the chart declares', () => {
    const text = section('Kubernetes versions');
    const chart = parse(readFileSync(join(projectRoot, 'charts', 'kvpool', 'Chart.yaml'), 'utf8')) as {
      kubeVersion: string;
    };
    assert.ok(text.includes(`**${toolchainValue('KUBE_VERSION')}**`), 'the tested version');
    assert.ok(text.includes(`kubeVersion: "${chart.kubeVersion}"`), 'the chart’s kubeVersion');
    const minimum = /^>=(\d+\.\d+)\./.exec(chart.kubeVersion)![1]!;
    assert.ok(text.includes(`**${minimum} or newer**`), `the minimum ${minimum}`);
    for (const helm of ['HELM_VERSION', 'HELM4_VERSION'])
      assert.ok(text.includes(toolchainValue(helm)), helm);
  });

  it('shows the InstanceType example, whose role gets the device and default image the page says', () => {
    const text = section('An InstanceType for GPU nodes');
    const type = example<InstanceType>('instancetype-nvidia.yaml');
    assert.ok(
      yamlBlocks(text).some((b) => within(b, type)),
      'the YAML on the page is the example’s',
    );
    const role = { name: 'server', instanceType: type.metadata.name! };
    const resources = roleResources(role as never, type, true);
    assert.equal(resources.limits?.['nvidia.com/gpu'], '1');
    assert.equal(resources.limits?.cpu, type.spec.unitResources.cpu);
    assert.deepEqual(resources.requests, { cpu: '100m', memory: '128Mi' });
    // The node labels of the page's command give the runtime the image is tagged for.
    const command = /kubectl label node <gpu-node> (.*)/.exec(text)![1]!;
    const labels = Object.fromEntries(command.split(' ').map((l) => l.split('=') as [string, string]));
    const node = { metadata: { name: 'gpu-1', labels } } as KubeObject;
    const [runtime] = poolRuntimeVersions(type, [node]);
    const md = { spec: { engine: { name: 'vLLM', version: '0.29.0' }, roles: [role] } } as ModelDeployment;
    const image = engineImage(md, role as never, type, runtime);
    assert.ok(text.includes(`\`${image}\``), `the page's default image: ${image}`);
  });

  it('lists every injection key the webhook reads, and the example Deployment’s Pods are injected', () => {
    const text = section('Your own engine Pods');
    const listed = new Set([...text.matchAll(/^\| `(kvcache\.gpustack\.ai\/[a-z-]+)`/gm)].map((m) => m[1]!));
    assert.deepEqual([...listed].sort(), [...userKeys, injectLabel].sort());
    assert.deepEqual(podInjectionHook.objectSelector, { matchLabels: { [injectLabel]: 'true' } });
    assert.match(text, new RegExp(`\`failurePolicy\` is \`${podInjectionHook.failurePolicy}\``));

    const deployment = example<{ spec: { template: { metadata: Pod['metadata']; spec: Pod['spec'] } } }>(
      'vllm-deployment.yaml',
    );
    assert.ok(yamlBlocks(text).some((b) => within(b, deployment.spec)));
    const template = deployment.spec.template;
    const pod = {
      metadata: { ...template.metadata, namespace: 'team-a' },
      spec: template.spec,
    } as AdmittedPod;
    const ctx = {
      binding: binding('team-a', 'team-a', { domain: null, blockSize: 64, dtype: 'bfloat16' }),
      pool: readyPool(),
      backend: backend(),
      dtypeOwned: true,
    };
    const verdict = planPodInjection(pod, ctx);
    assert.ok(verdict.ok, verdict.ok ? '' : verdict.message);
    const container = verdict.patch.find((p) => p.path === '/spec/containers/0')!.value as {
      args: string[];
      env: { name: string }[];
    };
    const added = container.args.slice(template.spec!.containers[0]!.args!.length);
    assert.deepEqual(
      added.filter((a) => a.startsWith('--')),
      ['--kv-transfer-config', '--kv-cache-dtype', '--block-size'],
    );
    for (const flag of added.filter((a) => a.startsWith('--'))) assert.ok(text.includes(`\`${flag}`), flag);
    for (const { name } of container.env) assert.ok(text.includes(name), name);
    // The page's refusals: a flag the injection writes, set by the Pod itself.
    const own = structuredClone(pod);
    own.spec.containers[0]!.args!.push('--block-size', '16');
    assert.ok(!planPodInjection(own, ctx).ok);
  });

  it('shows the external backend example, and a Pod attaches to it', () => {
    const text = section('A Mooncake store kvpool does not run');
    const external = example<KVCacheBackend>('external-backend.yaml');
    assert.deepEqual(yamlBlocks(text)[0], external);
    const names = external.spec.connection.external!.endpoints.map((e) => e.name).sort();
    assert.deepEqual(names, ['Admin', 'Client']);
    const deployment = example<{ spec: { template: { metadata: Pod['metadata']; spec: Pod['spec'] } } }>(
      'vllm-deployment.yaml',
    );
    const template = deployment.spec.template;
    const pod = {
      metadata: { ...template.metadata, namespace: 'team-a' },
      spec: template.spec,
    } as AdmittedPod;
    const verdict = planPodInjection(pod, {
      binding: binding('team-a', 'team-a'),
      pool: readyPool(),
      backend: external,
      dtypeOwned: true,
    });
    assert.ok(verdict.ok, verdict.ok ? '' : verdict.message);
    // The master flags the page names are the ones a managed leader runs with.
    const leader = readFileSync(
      join(projectRoot, 'src', 'controllers', 'backend', 'render-leader.ts'),
      'utf8',
    );
    for (const [, flag] of text.matchAll(/`--([a-z_]+)=/g)) assert.ok(leader.includes(`-${flag}=`), flag!);
  });

  it('gives the Mooncake lines the doctor knows, and the default store image’s', () => {
    const text = section('Engine images and Mooncake lines');
    const rows = [...text.matchAll(/^\| (vLLM|SGLang) (\d+(?:\.\d+)+) \| (\d+\.\d+\.\d+) \|/gm)];
    assert.equal(rows.length, 2);
    for (const [, engine, version, line] of rows)
      assert.equal(clientLine(engine!, `${version}.0`), line, engine);
    const image = settingDefaults['kv-cache-backend-image'];
    assert.ok(text.includes(`\`${image}\``));
    assert.ok(text.includes(`**${storeLine(image)}**`));
    assert.ok(text.includes(`cpu-vllm${toolchainValue('VLLM_CPU_VERSION')}`));
    assert.ok(text.includes(toolchainValue('MOONCAKE_VERSION')));
  });
});
