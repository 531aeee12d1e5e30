// A ModelDeployment gets no more than Pod Security 'baseline' allows, since the operator creates its
// engine Pods with its own rights (docs/decisions/0029): a real apiserver, the operator's webhooks,
// and a deployment stored before the rule existed.

import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Deployment } from 'kubernetes-types/apps/v1.js';
import { renderAllCrds } from '../../src/api/crd.ts';
import type { ModelDeploymentRole } from '../../src/api/model-deployment.ts';
import type { ModelDeployment } from '../../src/api/types.ts';
import type { ApiError } from '../../src/kube/errors.ts';
import type { KubeObject } from '../../src/kube/object.ts';
import { instanceType, modelDeployment, runnerImage, v1 } from '../builders/index.ts';
import { ensureNamespace } from '../support/cluster.ts';
import { type IsolatedCluster, startIsolatedCluster } from '../support/isolated-cluster.ts';
import { type InProcessOperator, startOperatorInProcess } from '../support/operator.ts';
import { condition } from '../support/pool-waits.ts';
import { refusalOf } from '../support/refusal.ts';
import { untilGone, waitFor } from '../support/wait.ts';

const ns = 'team-a';
const rule = 'the operator creates engine Pods with its own rights';
const ownDeployment = 'kvcache.gpustack.ai/inject=true';

function deployment(name: string, role: Record<string, unknown> = {}): KubeObject {
  return modelDeployment(name, {
    metadata: { namespace: ns },
    spec: { engine: { name: 'vLLM', image: runnerImage } },
    roles: [{ instanceType: 'local', ...role } as Partial<ModelDeploymentRole>],
  });
}

const nodeRoot = { name: 'node', hostPath: { path: '/' }, mountPath: '/host' };

/** The ModelDeployment CRD without the rules this file is about: the API as it was before them. */
function crdBeforeTheRule(): KubeObject {
  const crd = renderAllCrds().find((c) => c.kind === 'ModelDeployment')!.crd;
  const strip = (node: unknown): void => {
    if (!node || typeof node !== 'object') return;
    const o = node as Record<string, unknown>;
    const rules = o['x-kubernetes-validations'] as { message?: string }[] | undefined;
    if (rules) {
      const kept = rules.filter((r) => !r.message?.includes("Pod Security 'baseline'"));
      if (kept.length) o['x-kubernetes-validations'] = kept;
      else delete o['x-kubernetes-validations'];
    }
    for (const value of Object.values(o)) strip(value);
  };
  strip(crd);
  return crd;
}

describe('ModelDeployment: no more than baseline, though the operator creates the Pods', () => {
  let cluster: IsolatedCluster;
  let operator: InProcessOperator;
  const get = (name: string) =>
    cluster.client.get<ModelDeployment>({ apiVersion: v1, kind: 'ModelDeployment', namespace: ns, name });
  const engineDeployment = (name: string) =>
    waitFor(
      () =>
        cluster.client.find<KubeObject<Deployment>>({
          apiVersion: 'apps/v1',
          kind: 'Deployment',
          namespace: ns,
          name,
        }),
      { what: `Deployment ${name}`, timeoutMs: 15_000 },
    );
  const refusal = (obj: KubeObject | Promise<unknown>): Promise<ApiError> =>
    refusalOf(obj instanceof Promise ? obj : cluster.client.create(obj));

  before(async () => {
    cluster = await startIsolatedCluster();
    await ensureNamespace(cluster.client, ns);
    await cluster.client.create(instanceType('local'));
    // Stored while neither the schema nor admission refused it: an installation being upgraded.
    await cluster.client.apply(crdBeforeTheRule(), { fieldManager: 'kvpool-installer', force: true });
    await waitFor(
      () => cluster.client.create(deployment('stored', { privileged: true, additionalVolumes: [nodeRoot] })),
      {
        what: 'the rule-less CRD in force',
        timeoutMs: 15_000,
      },
    );
    await cluster.client.apply(renderAllCrds().find((c) => c.kind === 'ModelDeployment')!.crd, {
      fieldManager: 'kvpool-installer',
      force: true,
    });
    operator = await startOperatorInProcess(cluster.cp.kubeconfigPath, { webhooks: true });
  });
  after(async () => {
    await operator?.stop();
    await cluster?.stop();
  });

  it('refuses a privileged engine and a hostPath volume, naming the field, the rule and the way out', async () => {
    const privileged = await refusal(deployment('privileged', { privileged: true }));
    for (const text of ['spec.roles[0].privileged', rule, ownDeployment])
      assert.ok(privileged.message.includes(text), `message lacks "${text}": ${privileged.message}`);
    const scratch = { name: 'scratch', emptyDir: {}, mountPath: '/scratch' };
    const hostPath = await refusal(deployment('host-path', { additionalVolumes: [scratch, nodeRoot] }));
    for (const text of ['spec.roles[0].additionalVolumes', 'hostPath', rule, 'persistentVolumeClaim'])
      assert.ok(hostPath.message.includes(text), `message lacks "${text}": ${hostPath.message}`);
  });

  it('has no field for host namespaces, host ports or capabilities: the apiserver drops them', async () => {
    await cluster.client.create(
      deployment('host', {
        hostNetwork: true,
        hostPID: true,
        hostIPC: true,
        securityContext: { capabilities: { add: ['SYS_ADMIN'] }, allowPrivilegeEscalation: true },
        ports: [{ port: 8000, hostPort: 8000 }],
        additionalVolumes: [{ name: 'scratch', emptyDir: {}, mountPath: '/scratch' }],
      }),
    );
    const stored = (await get('host')).spec.roles[0] as Record<string, unknown>;
    for (const key of ['hostNetwork', 'hostPID', 'hostIPC', 'securityContext'])
      assert.equal(stored[key], undefined, key);
    const pod = (await engineDeployment('host-server')).spec!.template.spec!;
    for (const key of ['hostNetwork', 'hostPID', 'hostIPC'] as const) assert.equal(pod[key], undefined, key);
    assert.deepEqual(pod.securityContext ?? {}, {}, 'the apiserver defaults an empty one');
    assert.equal(pod.containers[0]!.securityContext, undefined);
    assert.deepEqual(
      pod.containers[0]!.ports!.map((p) => p.hostPort),
      [undefined],
    );
    assert.equal(pod.automountServiceAccountToken, false, 'no token unless the role asks for one');
  });

  it('mounts the token of a role that asks for it', async () => {
    await cluster.client.create(deployment('token', { automountServiceAccountToken: true }));
    const pod = (await engineDeployment('token-server')).spec!.template.spec!;
    assert.equal(pod.automountServiceAccountToken, true);
  });

  it('stops acting for one stored before the rule: not rendered, its edits refused, its deletion completes', async () => {
    const md = await waitFor(() => get('stored'), {
      what: 'ReplicasUpToDate=False RenderFailed on the stored privileged deployment',
      until: (m) => condition(m, 'ReplicasUpToDate')?.reason === 'RenderFailed',
      timeoutMs: 15_000,
    });
    const why = condition(md, 'ReplicasUpToDate')!.message;
    for (const text of [
      'spec.roles[0].privileged',
      'spec.roles[0].additionalVolumes[0].hostPath',
      ownDeployment,
    ])
      assert.ok(why.includes(text), `condition lacks "${text}": ${why}`);
    assert.equal(
      await cluster.client.find({
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        namespace: ns,
        name: 'stored-server',
      }),
      undefined,
      'no privileged Deployment was created',
    );
    const scaled = structuredClone(md);
    scaled.spec.roles[0]!.replicas = 2;
    const edit = await refusal(cluster.client.replace(scaled));
    assert.ok(edit.message.includes('spec.roles[0].privileged'), edit.message);
    // The finalizer's removal is a metadata-only update: neither the schema nor admission refuses it.
    await cluster.client.delete({ apiVersion: v1, kind: 'ModelDeployment', namespace: ns, name: 'stored' });
    await untilGone(
      cluster.client,
      { apiVersion: v1, kind: 'ModelDeployment', namespace: ns, name: 'stored' },
      { what: 'the stored deployment gone', timeoutMs: 15_000 },
    );
  });
});
