// A managed store's NetworkPolicies on a real apiserver (nothing enforces them here): they admit the
// namespaces holding a Binding to the store, follow a Binding created and deleted, change nothing on
// an idle pass, and go with the backend. The operator runs with the chart's permissions.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { NetworkPolicy } from 'kubernetes-types/networking/v1.js';
import type { KubeObject } from '../../src/kube/object.ts';
import { binding, pool, v1 } from '../builders/index.ts';
import { ensureNamespace } from '../support/cluster.ts';
import { type IsolatedCluster, startIsolatedCluster } from '../support/isolated-cluster.ts';
import { type InProcessOperator, startOperatorInProcess } from '../support/operator.ts';
import { afterReconciles } from '../support/reconciles.ts';
import { waitFor } from '../support/wait.ts';

const system = 'gpustack-system';
const store = 'np-store';
const policyNames = [`${store}-leader`, `${store}-member`, `${store}-tier-cleanup`];

// Without multi-tenancy a deleted Binding is released without a master to answer (none runs here).
const managedBackend = {
  apiVersion: v1,
  kind: 'KVCacheBackend',
  metadata: { name: store },
  spec: {
    image: 'kvpool/kvpool-store:test',
    connection: {
      managed: {
        leader: { multiTenancy: false },
        members: [
          { nodeSelector: { 'kubernetes.io/os': 'linux' }, medium: 'DRAM', capacityPerMember: '1Gi' },
        ],
      },
    },
  },
} as KubeObject;

describe('a managed store’s NetworkPolicies follow its Bindings', () => {
  let cluster: IsolatedCluster;
  let operator: InProcessOperator;
  const policy = (name: string) =>
    cluster.client.find<KubeObject<NetworkPolicy>>({
      apiVersion: 'networking.k8s.io/v1',
      kind: 'NetworkPolicy',
      namespace: system,
      name,
    });
  /** The namespaces the RPC rule (leader) and the transfer rule (members) admit, and every other peer. */
  const admitted = async () => {
    const [leader, members] = await Promise.all([policy(`${store}-leader`), policy(`${store}-member`)]);
    const namespaces = (p: KubeObject<NetworkPolicy> | undefined) =>
      p?.spec?.ingress?.[0]?.from?.flatMap((f) => f.namespaceSelector?.matchExpressions?.[0]?.values ?? []);
    return { leader, members, rpc: namespaces(leader), transfer: namespaces(members) };
  };
  const admitting = (namespaces: string[]) =>
    waitFor(
      async () => {
        const a = await admitted();
        return a.rpc?.join() === namespaces.join() && a.transfer?.join() === namespaces.join()
          ? a
          : undefined;
      },
      { what: `the store's policies admitting [${namespaces.join(', ')}]` },
    );

  before(async () => {
    cluster = await startIsolatedCluster({ controllers: true });
    for (const ns of [system, 'team-a', 'team-b']) await ensureNamespace(cluster.client, ns);
    operator = await startOperatorInProcess(cluster.cp.kubeconfigPath, { observeIntervalMs: 2000 });
    await cluster.client.create(managedBackend);
  });
  after(async () => {
    await operator?.stop();
    await cluster?.stop();
  });

  it('admits only the store’s own Pods on the RPC and transfer ports, and the operator on the admin port, while nothing is bound', async () => {
    const { leader, members } = await waitFor(
      async () => {
        const a = await admitted();
        return a.leader && a.members ? a : undefined;
      },
      { what: 'the leader and member policies' },
    );
    const own = {
      podSelector: {
        matchLabels: { 'app.kubernetes.io/name': 'kv-cache-backend', 'app.kubernetes.io/instance': store },
      },
    };
    assert.deepEqual(leader!.spec!.ingress, [
      { from: [own], ports: [{ protocol: 'TCP', port: 50051 }] },
      {
        from: [
          {
            namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': system } },
            podSelector: {
              matchLabels: { 'app.kubernetes.io/name': 'kvpool', 'app.kubernetes.io/component': 'operator' },
            },
          },
        ],
        ports: [{ protocol: 'TCP', port: 9003 }],
      },
    ]);
    assert.deepEqual(members!.spec!.ingress?.[0]?.from, [own]);
    assert.equal(leader!.metadata.ownerReferences?.[0]?.name, store);
  });

  it('admits a namespace once it holds a Binding to the store, and drops it when the Binding is gone', async () => {
    await cluster.client.create(pool('np-pool', { backend: store, total: '4Gi' }));
    await cluster.client.create(binding('team-a', 'np', { pool: 'np-pool', ceiling: '1Gi', domain: null }));
    await admitting(['team-a']);
    await cluster.client.create(binding('team-b', 'np', { pool: 'np-pool', ceiling: '1Gi', domain: null }));
    const both = await admitting(['team-a', 'team-b']);

    // An idle pass applies nothing: the policies keep their resourceVersion.
    await afterReconciles('kvcachebackend', 3);
    const idle = await admitted();
    assert.equal(idle.leader?.metadata.resourceVersion, both.leader?.metadata.resourceVersion);
    assert.equal(idle.members?.metadata.resourceVersion, both.members?.metadata.resourceVersion);

    await cluster.client.delete({
      apiVersion: v1,
      kind: 'KVCachePoolBinding',
      namespace: 'team-a',
      name: 'np',
    });
    await admitting(['team-b']);
    assert.equal(
      await cluster.client.find({
        apiVersion: v1,
        kind: 'KVCachePoolBinding',
        namespace: 'team-a',
        name: 'np',
      }),
      undefined,
      'the Binding is gone before its namespace is dropped',
    );
  });

  it('are removed with the backend', async () => {
    await cluster.client.delete({
      apiVersion: v1,
      kind: 'KVCachePoolBinding',
      namespace: 'team-b',
      name: 'np',
    });
    const ref = { apiVersion: v1, kind: 'KVCachePool', name: 'np-pool' };
    await cluster.client.delete(ref);
    await waitFor(async () => ((await cluster.client.find(ref)) ? undefined : true), {
      what: 'the pool gone',
    });
    await cluster.client.delete({ apiVersion: v1, kind: 'KVCacheBackend', name: store });
    await waitFor(
      async () => {
        const left = (await Promise.all(policyNames.map(policy))).filter(Boolean);
        return left.length === 0 ? true : undefined;
      },
      { what: 'every NetworkPolicy of the store gone', timeoutMs: 120_000 },
    );
  });
});
