// A managed backend on a real control plane with kube-controller-manager and kube-scheduler: every
// rendered object exists with its fields, the Deployment and DaemonSet controllers act on them, a
// node-selector edit keeps the members, an image edit recreates them one at a time, and HA keeps the
// first leader.

import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { KVCacheBackend } from '../../src/api/types.ts';
import type { KubeObject } from '../../src/kube/object.ts';
import { ensureNamespace } from '../support/cluster.ts';
import { type IsolatedCluster, startIsolatedCluster } from '../support/isolated-cluster.ts';
import { type InProcessOperator, startOperatorInProcess } from '../support/operator.ts';
import { registerReadyNodes } from '../support/ready-nodes.ts';
import { afterReconciles } from '../support/reconciles.ts';
import { seedObjects } from '../support/seed.ts';
import { waitFor } from '../support/wait.ts';

const ns = 'gpustack-system';
const seed = (file: string) => seedObjects(file)[0]!;
// Tests read deep into built-in objects; a loose shape keeps the assertions readable.
// biome-ignore lint/suspicious/noExplicitAny: test-only access to arbitrary object fields
type Loose = any;
type Obj = KubeObject & { spec: Loose; status?: Loose };
const hashKey = 'kvcache.gpustack.ai/pod-spec-hash';

describe('a managed backend (Step 1, then Step 4) with the Deployment and DaemonSet controllers running', () => {
  let cluster: IsolatedCluster;
  let operator: InProcessOperator;
  const get = (kind: string, name: string, apiVersion = 'apps/v1') =>
    cluster.client.get<Obj>({ apiVersion, kind, namespace: ns, name });
  const pods = async (component: string) =>
    (
      await cluster.client.list<Obj>(
        { apiVersion: 'v1', kind: 'Pod', namespace: ns },
        { labelSelector: `app.kubernetes.io/component=${component}` },
      )
    ).items;
  const editBackend = async (edit: (b: KVCacheBackend) => void) => {
    for (;;) {
      const b = await cluster.client.get<KVCacheBackend>({
        apiVersion: 'worker.gpustack.ai/v1',
        kind: 'KVCacheBackend',
        name: 'mooncake-dram',
      });
      edit(b);
      try {
        return await cluster.client.replace(b);
      } catch (e) {
        if (!String(e).includes('modified')) throw e;
      }
    }
  };

  before(async () => {
    cluster = await startIsolatedCluster({ controllers: true });
    await ensureNamespace(cluster.client, ns);
    await registerReadyNodes(cluster.client, ['node-a', 'node-b']);
    operator = await startOperatorInProcess(cluster.cp.kubeconfigPath, { webhooks: true });
    await cluster.client.create(seed('step-1-store.yaml'));
  });
  after(async () => {
    await operator?.stop();
    await cluster?.stop();
  });

  it('renders the leader Deployment, Service, election RBAC and one member DaemonSet', async () => {
    const deploy = await waitFor(() => get('Deployment', 'mooncake-dram-leader').catch(() => undefined), {
      what: 'the leader Deployment',
    });
    assert.equal(deploy.spec.replicas, 1);
    assert.deepEqual(deploy.spec.strategy, {
      type: 'RollingUpdate',
      rollingUpdate: { maxSurge: 1, maxUnavailable: 0 },
    });
    const leader = deploy.spec.template.spec.containers[0];
    assert.deepEqual(leader.command, ['kvpool-store']);
    assert.ok(
      leader.args.includes('--election=Kubernetes') && leader.args.includes('-enable_multi_tenants=true'),
    );
    assert.equal(deploy.spec.template.spec.serviceAccountName, 'mooncake-dram-leader');
    const svc = await get('Service', 'mooncake-dram-leader', 'v1');
    assert.deepEqual(
      svc.spec.ports.map((p: { name: string; port: number }) => [p.name, p.port]),
      [['rpc', 50051]],
      'engines reach the RPC port alone',
    );
    const admin = await get('Service', 'mooncake-dram-admin', 'v1');
    assert.deepEqual(
      admin.spec.ports.map((p: { name: string; port: number }) => [p.name, p.port]),
      [['admin', 9003]],
    );
    const role = await cluster.client.get<KubeObject & { rules: { resources: string[]; verbs: string[] }[] }>(
      {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'Role',
        namespace: ns,
        name: 'mooncake-dram-leader',
      },
    );
    assert.deepEqual(role.rules, [
      {
        apiGroups: ['coordination.k8s.io'],
        resources: ['leases'],
        resourceNames: ['mooncake-dram-leader'],
        verbs: ['get', 'update', 'patch'],
      },
      {
        apiGroups: [''],
        resources: ['configmaps'],
        resourceNames: ['mooncake-dram-tenant-quota-policy'],
        verbs: ['get'],
      },
    ]);
    const lease = await get('Lease', 'mooncake-dram-leader', 'coordination.k8s.io/v1');
    assert.equal(
      lease.metadata.ownerReferences?.[0]?.kind,
      'KVCacheBackend',
      'the operator creates the Lease',
    );
    for (const policy of ['mooncake-dram-leader', 'mooncake-dram-member', 'mooncake-dram-tier-cleanup'])
      await get('NetworkPolicy', policy, 'networking.k8s.io/v1');
    await get('PodDisruptionBudget', 'mooncake-dram-leader', 'policy/v1');
    // The DaemonSets are the last children applied, a moment after the Deployment.
    const ds = await waitFor(() => get('DaemonSet', 'mooncake-dram-member-0').catch(() => undefined), {
      what: 'the member DaemonSet',
    });
    assert.equal(ds.spec.updateStrategy.type, 'OnDelete');
    assert.match(ds.spec.template.metadata.annotations[hashKey], /^[0-9a-f]{64}$/);
    assert.equal(ds.spec.template.spec.containers[0].resources.requests.memory, '8Gi');
    for (const o of [deploy, svc, ds]) assert.equal(o.metadata.ownerReferences?.[0]?.kind, 'KVCacheBackend');
  });

  it('is acted on by the real Deployment and DaemonSet controllers', async () => {
    await waitFor(async () => ((await pods('leader')).length === 1 ? true : undefined), {
      what: 'a leader Pod from the ReplicaSet',
    });
    const ds = await waitFor(
      async () => {
        const d = await get('DaemonSet', 'mooncake-dram-member-0');
        return d.status?.desiredNumberScheduled === 2 ? d : undefined;
      },
      { what: 'the DaemonSet to want a Pod on both nodes' },
    );
    assert.equal(ds.status?.desiredNumberScheduled, 2);
    const members = await waitFor(
      async () => {
        const p = await pods('member-0');
        return p.length === 2 ? p : undefined;
      },
      { what: 'two member Pods' },
    );
    assert.deepEqual(members.map((p) => p.spec.nodeName).sort(), ['node-a', 'node-b']);
    const b = await cluster.client.get<KVCacheBackend>({
      apiVersion: 'worker.gpustack.ai/v1',
      kind: 'KVCacheBackend',
      name: 'mooncake-dram',
    });
    assert.equal(b.status?.phase, 'Provisioning', 'no kubelet runs these Pods, so the leader never starts');
    assert.deepEqual(
      b.status?.endpoints?.find((e) => e.name === 'Client'),
      { name: 'Client', address: 'mooncake-dram-leader.gpustack-system.svc:50051' },
    );
    assert.equal(b.status?.capacity, undefined, 'capacity is absent until the store reports it');
  });

  it('keeps the member Pods when the node selector is edited (the pod-spec hash ignores it)', async () => {
    const before = await get('DaemonSet', 'mooncake-dram-member-0');
    const onNodeA = (await pods('member-0')).find((p) => p.spec.nodeName === 'node-a');
    assert.ok(onNodeA);
    await editBackend((b) => {
      b.spec.connection.managed!.members[0]!.nodeSelector = {
        'kubernetes.io/os': 'linux',
        'kubernetes.io/hostname': 'node-a',
      };
    });
    const after = await waitFor(
      async () => {
        const d = await get('DaemonSet', 'mooncake-dram-member-0');
        return d.spec.template.spec.nodeSelector['kubernetes.io/hostname'] === 'node-a' ? d : undefined;
      },
      { what: 'the DaemonSet to take the new selector' },
    );
    assert.equal(
      after.spec.template.metadata.annotations[hashKey],
      before.spec.template.metadata.annotations[hashKey],
    );
    // Each pass of the only backend would delete a Pod of an old hash; let several run.
    await afterReconciles('kvcachebackend', 3);
    const same = (await pods('member-0')).find((p) => p.metadata.uid === onNodeA.metadata.uid);
    assert.ok(same, 'the member on the still-selected node is kept');
    assert.equal(same.metadata.deletionTimestamp, undefined, 'and not being deleted');
  });

  it('raises the leader to 3 replicas for Step 4, keeping the first leader Pod', async () => {
    const first = (await pods('leader')).map((p) => p.metadata.uid);
    await cluster.client.apply(seed('step-4-ha.yaml'), { fieldManager: 'walkthrough' });
    const deploy = await waitFor(
      async () => {
        const d = await get('Deployment', 'mooncake-dram-leader');
        return d.spec.replicas === 3 ? d : undefined;
      },
      { what: '3 replicas' },
    );
    assert.equal(deploy.spec.strategy.type, 'RollingUpdate');
    assert.deepEqual(deploy.spec.strategy.rollingUpdate, { maxSurge: 1, maxUnavailable: 2 });
    assert.equal(deploy.spec.progressDeadlineSeconds, 2147483647);
    const leaders = await waitFor(
      async () => {
        const p = await pods('leader');
        return p.length === 3 ? p : undefined;
      },
      { what: 'three leader Pods' },
    );
    assert.ok(
      first.every((uid) => leaders.some((p) => p.metadata.uid === uid)),
      'the first leader Pod is kept',
    );
  });
  it('recreates one member Pod when the image changes, and waits for it before the next', async () => {
    const before = await get('DaemonSet', 'mooncake-dram-member-0');
    const old = new Set((await pods('member-0')).map((p) => p.metadata.uid));
    await editBackend((b) => {
      b.spec.image = 'registry.example.com/kvpool-store:2.0';
    });
    const after = await waitFor(
      async () => {
        const d = await get('DaemonSet', 'mooncake-dram-member-0');
        return d.spec.template.metadata.annotations[hashKey] !==
          before.spec.template.metadata.annotations[hashKey]
          ? d
          : undefined;
      },
      { what: 'a new hash' },
    );
    assert.equal(after.spec.template.spec.containers[0].image, 'registry.example.com/kvpool-store:2.0');
    // No kubelet runs here to finish a Pod's termination, so the first replacement never comes: the
    // operator says it waits, and the other member stays.
    const waiting = await waitFor(
      async () => {
        const b = await cluster.client.get<KVCacheBackend>({
          apiVersion: 'worker.gpustack.ai/v1',
          kind: 'KVCacheBackend',
          name: 'mooncake-dram',
        });
        const c = b.status?.conditions?.find((x) => x.type === 'RolloutComplete');
        return c?.status === 'False' &&
          /member Pods run the current template; waiting for \S+ on node-\w to stop$/.test(c.message)
          ? c
          : undefined;
      },
      { what: 'the operator to report that it waits on the first member' },
    );
    const stale = (await pods('member-0')).filter((p) => old.has(p.metadata.uid));
    assert.equal(
      stale.filter((p) => p.metadata.deletionTimestamp).length,
      1,
      `one deleted: ${waiting.message}`,
    );
    assert.equal(stale.filter((p) => !p.metadata.deletionTimestamp).length, 1, 'the other member is kept');
  });
});
