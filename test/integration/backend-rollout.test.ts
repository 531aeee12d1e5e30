// Rollouts and drains that keep the cache, decided by the operator on a real control plane (the
// Deployment, ReplicaSet, DaemonSet, EndpointSlice and disruption controllers, the scheduler, the
// Eviction API). No kubelet runs Pods here: test/support/pod-status-writer.ts writes what kubelets and
// the leaders' kvpool-store would (Pod status, the Lease holder and its handover). On real nodes, the
// end-to-end tests run the same rollout with the real store.

import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Lease } from 'kubernetes-types/coordination/v1.js';
import type { KVCacheBackend } from '../../src/api/types.ts';
import type { KubeObject } from '../../src/kube/object.ts';
import { group, managedBackend } from '../builders/index.ts';
import { ensureNamespace } from '../support/cluster.ts';
import { type IsolatedCluster, startIsolatedCluster } from '../support/isolated-cluster.ts';
import { type InProcessOperator, startOperatorInProcess } from '../support/operator.ts';
import { PodStatusWriter } from '../support/pod-status-writer.ts';
import { registerReadyNodes } from '../support/ready-nodes.ts';
import { waitFor } from '../support/wait.ts';

const ns = 'gpustack-system';
const name = 'rolling';
const hashKey = 'kvcache.gpustack.ai/pod-spec-hash';
// biome-ignore lint/suspicious/noExplicitAny: test-only access to arbitrary object fields
type Loose = any;
type Obj = KubeObject & { spec: Loose; status?: Loose };

describe('a two-node backend with three leader replicas', () => {
  let cluster: IsolatedCluster;
  let operator: InProcessOperator;
  let writer: PodStatusWriter;
  const pods = async (component: string) =>
    (
      await cluster.client.list<Obj>(
        { apiVersion: 'v1', kind: 'Pod', namespace: ns },
        { labelSelector: `app.kubernetes.io/instance=${name},app.kubernetes.io/component=${component}` },
      )
    ).items;
  const get = (kind: string, n: string, apiVersion = 'apps/v1') =>
    cluster.client.get<Obj>({ apiVersion, kind, namespace: ns, name: n });
  const backend = () =>
    cluster.client.get<KVCacheBackend>({ apiVersion: 'worker.gpustack.ai/v1', kind: 'KVCacheBackend', name });
  const rollout = async () => (await backend()).status?.conditions?.find((c) => c.type === 'RolloutComplete');
  const evict = (pod: string) =>
    cluster.client
      .request('POST', `/api/v1/namespaces/${ns}/pods/${pod}/eviction`, {
        body: { apiVersion: 'policy/v1', kind: 'Eviction', metadata: { name: pod, namespace: ns } },
      })
      .then(
        () => 201,
        (e: { status?: number }) => e.status ?? 0,
      );
  const holderPod = async () => {
    const lease = await cluster.client.get<KubeObject<Lease>>({
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      namespace: ns,
      name: `${name}-leader`,
    });
    const ip = lease.spec?.holderIdentity?.split(':')[0];
    return (await pods('leader')).find((p) => ip && p.status?.podIP === ip);
  };

  before(async () => {
    cluster = await startIsolatedCluster({ controllers: true });
    await ensureNamespace(cluster.client, ns);
    await registerReadyNodes(cluster.client, ['node-a', 'node-b']);
    operator = await startOperatorInProcess(cluster.cp.kubeconfigPath);
    await cluster.client.create(
      managedBackend(
        name,
        { leader: { replicas: 3 }, members: [group({ capacityPerMember: '1Gi' })] },
        { image: 'registry.example.com/kvpool-store:1.0' },
      ),
    );
    writer = new PodStatusWriter(cluster.client, ns, `${name}-leader`, 1500);
    await waitFor(
      async () => {
        const [leaders, members] = [await pods('leader'), await pods('member-0')];
        const holder = await holderPod();
        const ready = members.filter((p) =>
          p.status?.conditions?.some((c: Loose) => c.type === 'Ready' && c.status === 'True'),
        );
        return leaders.length === 3 && holder && ready.length === 2 ? true : undefined;
      },
      { what: 'three running leaders (one holding the Lease) and two Ready members' },
    );
  });
  after(async () => {
    await writer?.stop();
    await operator?.stop();
    await cluster?.stop();
  });

  it('spreads the leader replicas over both nodes', async () => {
    const nodes = (await pods('leader')).map((p) => p.spec.nodeName).sort();
    assert.deepEqual([...new Set(nodes)], ['node-a', 'node-b']);
  });

  it('lets a drain evict a standby but not the serving leader (PodDisruptionBudget)', async () => {
    await waitFor(
      async () => {
        const pdb = await get('PodDisruptionBudget', `${name}-leader`, 'policy/v1');
        return pdb.status?.currentHealthy === 1 && pdb.status?.observedGeneration === pdb.metadata.generation
          ? pdb
          : undefined;
      },
      { what: 'the disruption controller to count the one healthy leader' },
    );
    const holder = (await holderPod())!;
    const standby = (await pods('leader')).find((p) => p.metadata.name !== holder.metadata.name)!;
    assert.equal(await evict(holder.metadata.name!), 429, 'the serving leader is not evicted');
    assert.equal(await evict(standby.metadata.name!), 201, 'a standby is');
    await waitFor(
      async () =>
        (await pods('leader')).filter((p) => !p.metadata.deletionTimestamp && p.spec.nodeName).length === 3
          ? true
          : undefined,
      { what: 'the Deployment to replace the evicted standby' },
    );
  });

  it('rolls a new image: members one at a time after each mount, then leadership handed over once', async () => {
    const before = {
      members: new Set((await pods('member-0')).map((p) => p.metadata.name)),
      leader: (await holderPod())!.metadata.name!,
      holders: writer.holders.length,
      stepDowns: writer.stepDowns.length,
      samples: writer.samples.length,
    };
    const b = await backend();
    b.spec.image = 'registry.example.com/kvpool-store:1.0-again';
    await cluster.client.replace(b);
    const done = await waitFor(
      async () => {
        const [c, ds, deploy] = [
          await rollout(),
          await get('DaemonSet', `${name}-member-0`),
          await get('Deployment', `${name}-leader`),
        ];
        const memberHash = ds.spec.template.metadata.annotations[hashKey];
        const leaderHash = deploy.spec.template.metadata.annotations[hashKey];
        const members = await pods('member-0');
        const leaders = await pods('leader');
        const rolled =
          members.length === 2 &&
          members.every(
            (p) => p.metadata.annotations?.[hashKey] === memberHash && !before.members.has(p.metadata.name),
          ) &&
          leaders.length === 3 &&
          leaders.every((p) => p.metadata.annotations?.[hashKey] === leaderHash);
        return rolled && c?.status === 'True' ? c : undefined;
      },
      { what: 'RolloutComplete=True on the new template', timeoutMs: 120_000 },
    );
    assert.match(done.message, /every leader replica \(3\) and member Pod runs the current template/);
    const during = writer.samples.slice(before.samples);
    const minReady = Math.min(...during.map((s) => s.readyMembers));
    const maxStopping = Math.max(...during.map((s) => s.stoppingMembers));
    console.log(
      `member roll: at least ${minReady} of 2 members Ready throughout, at most ${maxStopping} stopping at once`,
    );
    assert.equal(minReady, 1, 'one member serves while the other is replaced; never none');
    assert.ok(maxStopping <= 1, 'never two members replaced at once');
    assert.deepEqual(
      writer.stepDowns.slice(before.stepDowns),
      [before.leader],
      'one step-down: the old leader',
    );
    assert.equal(writer.holders.length - before.holders, 1, 'one handover');
    const newLeader = writer.holders.at(-1)!;
    assert.notEqual(newLeader, before.leader);
    const lease = await cluster.client.get<KubeObject<Lease>>({
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      namespace: ns,
      name: `${name}-leader`,
    });
    assert.equal(
      lease.metadata.annotations?.['kvcache.gpustack.ai/step-down'],
      undefined,
      'the request is dropped once the old Pod is gone',
    );
  });

  it('hands leadership over when the leader’s node is cordoned, so the drain can evict it', async () => {
    const holder = (await holderPod())!;
    const node = holder.spec.nodeName;
    await cluster.client.mergePatch(
      { apiVersion: 'v1', kind: 'Node', name: node },
      { spec: { unschedulable: true } },
    );
    const moved = await waitFor(
      async () => {
        const now = await holderPod();
        return now && now.metadata.name !== holder.metadata.name ? now : undefined;
      },
      { what: 'a leader on another node to hold the Lease' },
    );
    assert.notEqual(moved.spec.nodeName, node);
    assert.ok(writer.stepDowns.at(-1)!.split(',').includes(holder.metadata.name!), 'the leader was asked');
    assert.equal(writer.holders.at(-1), moved.metadata.name, 'one handover, straight to another node');
    await waitFor(async () => ((await evict(holder.metadata.name!)) === 201 ? true : undefined), {
      what: 'the stepped-down leader to be evictable',
    });
    await cluster.client.mergePatch(
      { apiVersion: 'v1', kind: 'Node', name: node },
      { spec: { unschedulable: false } },
    );
  });
});
