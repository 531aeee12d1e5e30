// An object that already holds the name of a child kvpool renders, and that kvpool does not control,
// is left exactly as it is: no field taken over, no owner reference added, not deleted with the
// ModelDeployment or backend; their status (or their pools', for a backend's tenant ConfigMaps) names
// it and the fix. The operator runs with the chart's permissions on a real apiserver.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { ConfigMap, Service } from 'kubernetes-types/core/v1.js';
import type { KVCacheBackend, KVCachePool, ModelDeployment } from '../../src/api/types.ts';
import type { KubeObject } from '../../src/kube/object.ts';
import { instanceType, managedBackend, modelDeployment, runnerImage, v1 } from '../builders/index.ts';
import { ensureNamespace } from '../support/cluster.ts';
import { type IsolatedCluster, startIsolatedCluster } from '../support/isolated-cluster.ts';
import { type InProcessOperator, startOperatorInProcess } from '../support/operator.ts';
import { condition } from '../support/pool-waits.ts';
import { untilGone, waitFor } from '../support/wait.ts';

const system = 'gpustack-system';

function someoneElsesService(name: string, namespace: string): KubeObject<Service> {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name, namespace, labels: { app: 'someone-else' } },
    spec: { selector: { app: 'someone-else' }, ports: [{ name: 'web', port: 80, targetPort: 8080 }] },
  };
}

/** A managed backend of one DRAM member group, the image given so no Setting is needed. */
const imagedBackend = (name: string) =>
  managedBackend(
    name,
    {
      leader: {},
      members: [{ nodeSelector: { kvcache: 'true' }, medium: 'DRAM', capacityPerMember: '1Gi' }],
    },
    { image: 'registry.example.com/kvpool-store:1.0' },
  );

describe('objects kvpool does not own', () => {
  let cluster: IsolatedCluster;
  let operator: InProcessOperator;
  const service = (name: string, namespace: string) =>
    cluster.client.find<KubeObject<Service>>({ apiVersion: 'v1', kind: 'Service', namespace, name });
  const untouched = async (name: string, namespace: string) => {
    const s = await service(name, namespace);
    assert.ok(s, `Service ${namespace}/${name} is gone`);
    assert.deepEqual(s.spec?.selector, { app: 'someone-else' });
    assert.deepEqual(
      s.spec?.ports?.map((p) => p.port),
      [80],
    );
    assert.equal(s.metadata.ownerReferences, undefined);
    assert.deepEqual(
      s.metadata.managedFields?.filter((f) => f.manager?.startsWith('kvpool')).map((f) => f.manager),
      [],
    );
  };

  before(async () => {
    cluster = await startIsolatedCluster();
    for (const ns of [system, 'team-a']) await ensureNamespace(cluster.client, ns);
    operator = await startOperatorInProcess(cluster.cp.kubeconfigPath, { observeIntervalMs: 2000 });
    await cluster.client.create(instanceType('local'));
  });
  after(async () => {
    await operator?.stop();
    await cluster?.stop();
  });

  it('leaves a Service named like a ModelDeployment as it is, names it in the status, and keeps it when the deployment goes', async () => {
    await cluster.client.create(someoneElsesService('qwen', 'team-a'));
    await cluster.client.create(
      modelDeployment('qwen', {
        spec: { model: { name: 'Qwen/Qwen2.5-0.5B-Instruct' }, engine: { name: 'vLLM', image: runnerImage } },
        roles: [{ instanceType: 'local' }],
      }),
    );
    const md = await waitFor(
      () =>
        cluster.client.find<ModelDeployment>({
          apiVersion: v1,
          kind: 'ModelDeployment',
          namespace: 'team-a',
          name: 'qwen',
        }),
      {
        what: 'ReplicasUpToDate=False ChildConflict on ModelDeployment qwen',
        until: (m) => condition(m, 'ReplicasUpToDate')?.reason === 'ChildConflict',
      },
    );
    const c = condition(md, 'ReplicasUpToDate')!;
    assert.equal(c.status, 'False');
    for (const text of ['Service team-a/qwen', 'no controller owns it', 'rename or delete that Service'])
      assert.ok(c.message.includes(text), `message lacks "${text}": ${c.message}`);
    assert.ok(md.status?.phaseMessage?.includes('Service team-a/qwen'), md.status?.phaseMessage);
    // The children whose names are free are applied as usual.
    assert.ok(await service('qwen-server', 'team-a'), 'the role Service was not created');
    const role = await cluster.client.find({
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      namespace: 'team-a',
      name: 'qwen-server',
    });
    assert.ok(role, 'the role Deployment was not created');
    await untouched('qwen', 'team-a');

    await cluster.client.delete({
      apiVersion: v1,
      kind: 'ModelDeployment',
      namespace: 'team-a',
      name: 'qwen',
    });
    await untilGone(
      cluster.client,
      { apiVersion: v1, kind: 'ModelDeployment', namespace: 'team-a', name: 'qwen' },
      { what: 'ModelDeployment qwen to be gone' },
    );
    await untouched('qwen', 'team-a');
  });

  it("leaves a Service named like a backend's leader Service as it is and names it in the backend status", async () => {
    await cluster.client.create(someoneElsesService('store-leader', system));
    await cluster.client.create(imagedBackend('store'));
    const backend = await waitFor(
      () => cluster.client.find<KVCacheBackend>({ apiVersion: v1, kind: 'KVCacheBackend', name: 'store' }),
      {
        what: 'RolloutComplete=False ChildConflict on backend store',
        until: (b) => condition(b, 'RolloutComplete')?.reason === 'ChildConflict',
      },
    );
    const c = condition(backend, 'RolloutComplete')!;
    assert.equal(c.status, 'False');
    for (const text of [`Service ${system}/store-leader`, 'create the KVCacheBackend under another name'])
      assert.ok(c.message.includes(text), `message lacks "${text}": ${c.message}`);
    assert.equal(backend.status?.phase, 'Degraded');
    const leader = await cluster.client.find({
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      namespace: system,
      name: 'store-leader',
    });
    assert.ok(leader, 'the leader Deployment was not created');
    await untouched('store-leader', system);
  });

  it("leaves a ConfigMap named like a backend's tenant policy as it is: the pools on it name it and keep off the ledger", async () => {
    const policy: KubeObject<ConfigMap> = {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'other-tenant-quota-policy', namespace: system },
      data: { 'tenant-quota-policy.yaml': 'mine: true\n' },
    };
    await cluster.client.create(policy);
    await cluster.client.create(imagedBackend('other'));
    await cluster.client.create({
      apiVersion: v1,
      kind: 'KVCachePool',
      metadata: { name: 'other-pool' },
      spec: { backends: ['other'], quota: { total: '512Mi' } },
    } as KubeObject);
    const pool = await waitFor(
      () => cluster.client.find<KVCachePool>({ apiVersion: v1, kind: 'KVCachePool', name: 'other-pool' }),
      {
        what: 'BackendResolved=False ChildConflict on pool other-pool',
        until: (p) => condition(p, 'BackendResolved')?.reason === 'ChildConflict',
      },
    );
    const c = condition(pool, 'BackendResolved')!;
    for (const text of [`ConfigMap ${system}/other-tenant-quota-policy`, "not KVCacheBackend other's own"])
      assert.ok(c.message.includes(text), `message lacks "${text}": ${c.message}`);
    const kept = await cluster.client.get<KubeObject<ConfigMap>>({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      namespace: system,
      name: 'other-tenant-quota-policy',
    });
    assert.deepEqual(kept.data, policy.data);
    assert.equal(kept.metadata.ownerReferences, undefined);
    assert.equal(kept.metadata.labels, undefined);
  });
});
