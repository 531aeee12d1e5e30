// ModelDeployments on a real apiserver and a real master: the default image is the runner tag formed from
// the nodes' accelerator runtime, a render failure shows in status, and a role's replica count kept while
// the cache is away is written by server-side apply.

import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { ModelDeploymentRole } from '../../src/api/model-deployment.ts';
import type { ModelDeployment } from '../../src/api/types.ts';
import type { KubeObject } from '../../src/kube/object.ts';
import { a10g, modelDeployment, v1 } from '../builders/index.ts';
import type { IsolatedCluster } from '../support/isolated-cluster.ts';
import type { MooncakeStore } from '../support/mooncake-store.ts';
import type { InProcessOperator } from '../support/operator.ts';
import { createReadyBinding, startPoolStack, stopPoolStack } from '../support/pool-stack.ts';
import { condition } from '../support/pool-waits.ts';
import { waitFor } from '../support/wait.ts';

type Workload = KubeObject & {
  spec: { replicas: number; template: { spec: { containers: { image: string }[] } } };
};
type ManagedField = { manager: string; operation: string; fieldsV1?: { 'f:spec'?: Record<string, unknown> } };

const group = 'acceleratable.feature.gpustack.ai/nvidia-a10g';
const runtime = 'acceleratable.feature.gpustack.ai/nvidia.runtime-version';

const deployment = (
  name: string,
  spec: Partial<ModelDeployment['spec']>,
  roles: Partial<ModelDeploymentRole>[],
) => modelDeployment(name, { spec, roles });

describe('ModelDeployment images, render failures and held replicas', () => {
  let cluster: IsolatedCluster;
  let store: MooncakeStore;
  let operator: InProcessOperator;
  const workload = (name: string) =>
    cluster.client.find<Workload>({ apiVersion: 'apps/v1', kind: 'Deployment', namespace: 'team-a', name });
  const imageOf = async (name: string) => (await workload(name))?.spec.template.spec.containers[0]?.image;
  const untilDeployment = (name: string, what: string, test: (m: ModelDeployment) => boolean) =>
    waitFor(
      () =>
        cluster.client.get<ModelDeployment>({
          apiVersion: v1,
          kind: 'ModelDeployment',
          namespace: 'team-a',
          name,
        }),
      { what: `ModelDeployment ${name}: ${what}`, until: test, timeoutMs: 15_000 },
    );
  const node = (name: string, version: string) =>
    cluster.client.apply(
      {
        apiVersion: 'v1',
        kind: 'Node',
        metadata: { name, labels: { [group]: 'true', [runtime]: version } },
      } as KubeObject,
      { fieldManager: 'kvpool-test' },
    );

  before(async () => {
    ({ cluster, store, operator } = await startPoolStack({ namespaces: ['team-a'] }));
    await cluster.client.create(a10g);
    await createReadyBinding(cluster.client, 'team-a', 'team-a', { ceiling: '32Mi', domain: 'chat' });
  });
  after(() => stopPoolStack({ operator, store, cluster }));

  it('shows why a role cannot be rendered in status, naming the image fields', async () => {
    await cluster.client.create(deployment('untagged', {}, [{}]));
    const m = await untilDeployment(
      'untagged',
      'a render failure',
      (x) => condition(x, 'ReplicasUpToDate')?.reason === 'RenderFailed',
    );
    assert.equal(m.status?.phase, 'Starting');
    assert.match(
      condition(m, 'ReplicasUpToDate')!.message,
      /no node of InstanceType nvidia-a10g .* reports acceleratable\.feature\.gpustack\.ai\/nvidia\.runtime-version, so no gpustack\/runner tag can be formed; label the nodes, or set spec\.roles\[\]\.image \(role server\) or spec\.engine\.image$/,
    );
    assert.equal(await workload('untagged-server'), undefined, 'nothing was applied');
  });

  it('runs the runner tag of the lowest runtime its InstanceType’s nodes report', async () => {
    await node('gpu-1', '12.9');
    await untilDeployment(
      'untagged',
      'rendered',
      (x) => condition(x, 'ReplicasUpToDate')?.reason !== 'RenderFailed',
    );
    assert.equal(await imageOf('untagged-server'), 'gpustack/runner:cuda12.9-vllm0.29.0');
    await node('gpu-2', '12.4');
    await waitFor(
      async () =>
        (await imageOf('untagged-server')) === 'gpustack/runner:cuda12.4-vllm0.29.0' ? true : undefined,
      { what: 'the image retagged for the lower runtime', timeoutMs: 15_000 },
    );
    const events = await cluster.client.list<KubeObject & { reason?: string; message?: string }>(
      { apiVersion: 'v1', kind: 'Event', namespace: 'team-a' },
      { fieldSelector: 'reason=RuntimeVersionSkew' },
    );
    assert.match(events.items[0]?.message ?? '', /run accelerator runtimes 12\.4, 12\.9/);
  });

  it('writes a held role’s replica count by server-side apply while the cache is away', async () => {
    await cluster.client.create(
      deployment(
        'cached',
        {
          engine: { name: 'vLLM', image: 'gpustack/runner:cuda12.9-vllm0.29.0' },
          kvCache: { poolRef: { name: 'team-a' } },
        },
        [{ replicas: 2 }],
      ),
    );
    await untilDeployment(
      'cached',
      'attached',
      (x) => condition(x, 'DomainRegistered')?.reason === 'Registered',
    );
    await waitFor(async () => ((await workload('cached-server'))?.spec.replicas === 2 ? true : undefined), {
      what: 'the Deployment with the connector',
      timeoutMs: 15_000,
    });
    await store.stopMaster();
    await untilDeployment(
      'cached',
      'held',
      (x) => condition(x, 'ReplicasUpToDate')?.reason === 'RolloutHeldByCache',
    );
    await cluster.client.mergePatch(
      { apiVersion: v1, kind: 'ModelDeployment', namespace: 'team-a', name: 'cached' },
      { spec: { roles: [{ name: 'server', instanceType: 'nvidia-a10g', replicas: 3 }] } },
    );
    const live = await waitFor(
      async () => {
        const d = await workload('cached-server');
        return d?.spec.replicas === 3 ? d : undefined;
      },
      { what: 'three replicas', timeoutMs: 15_000 },
    );
    const fields = (live.metadata as { managedFields?: ManagedField[] }).managedFields ?? [];
    const writers = fields.filter((f) => f.manager.startsWith('kvpool'));
    assert.deepEqual(
      writers.map((f) => f.operation),
      writers.map(() => 'Apply'),
      `every write is server-side apply: ${JSON.stringify(writers.map((f) => [f.manager, f.operation]))}`,
    );
    const replicaWriter = fields.find((f) => f.fieldsV1?.['f:spec']?.['f:replicas'] !== undefined);
    assert.equal(replicaWriter?.manager, 'kvpool-controller/replicas');
    assert.equal(replicaWriter?.operation, 'Apply');
    await store.startMaster();
  });
});
