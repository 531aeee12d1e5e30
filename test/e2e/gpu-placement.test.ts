// Placement on a cluster whose nodes are tainted as GPU nodes usually are (nvidia.com/gpu:NoSchedule):
// a backend and a ModelDeployment that tolerate the taint run there; without the toleration their
// conditions name the taint and say which field to set.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { localInstanceType } from '../../local/cluster.ts';
import type { KVCacheBackend, ModelDeployment } from '../../src/api/types.ts';
import { binding, group, managedBackend, pool } from '../builders/index.ts';
import { conditionOf, type E2ECluster, startE2ECluster } from '../support/local-cluster.ts';
import { waitFor } from '../support/wait.ts';

const v1 = 'worker.gpustack.ai/v1';
const taint = 'nvidia.com/gpu=present:NoSchedule';
const gpuToleration = [{ key: 'nvidia.com/gpu', operator: 'Exists' as const, effect: 'NoSchedule' as const }];

const store = (name: string, leader: boolean, members: boolean) =>
  managedBackend(
    name,
    {
      leader: { multiTenancy: true, ...(leader ? { tolerations: gpuToleration } : {}) },
      members: [group({ capacityPerMember: '128Mi', ...(members ? { tolerations: gpuToleration } : {}) })],
    },
    { type: 'Mooncake' },
  );

const deployment = (name: string, tolerate: boolean): ModelDeployment => ({
  apiVersion: v1,
  kind: 'ModelDeployment',
  metadata: { name, namespace: 'team-a' },
  spec: {
    model: { name: 'Qwen/Qwen3-0.6B' },
    engine: { name: 'vLLM', version: '0.29.0' },
    kvCache: { poolRef: { name: 'team-a' } },
    roles: [
      {
        name: 'server',
        replicas: 1,
        instanceType: localInstanceType,
        ...(tolerate ? { tolerations: gpuToleration } : {}),
      },
    ],
  },
});

describe('workloads on nodes tainted as GPU nodes', () => {
  let e: E2ECluster;
  const backend = (name: string, what: string, test: (b: KVCacheBackend) => boolean) =>
    waitFor(() => e.backend(name), { what: `${name}: ${what}`, until: test, timeoutMs: 240_000 });
  const md = (name: string) =>
    e.cluster.client.get<ModelDeployment>({
      apiVersion: v1,
      kind: 'ModelDeployment',
      namespace: 'team-a',
      name,
    });

  before(async () => {
    e = await startE2ECluster();
    for (const node of e.cluster.nodes) await e.kubectl(['taint', 'nodes', node, taint]);
    await e.kubectl(['create', 'namespace', 'team-a']);
  });
  after(() => e?.stop());

  it('runs a backend that tolerates the taint, and names the taint where one does not', async () => {
    await e.cluster.client.create(store('gpu-store', true, true));
    await e.cluster.client.create(store('no-leader', false, true));
    await e.cluster.client.create(store('no-members', true, false));
    await backend('gpu-store', 'Ready', (b) => b.status?.phase === 'Ready');
    const leader = await backend('no-leader', 'the leader unschedulable', (b) =>
      /nvidia\.com\/gpu/.test(conditionOf(b, 'LeaderAvailable')?.message ?? ''),
    );
    console.log(`no leader toleration: ${conditionOf(leader, 'LeaderAvailable')?.message}`);
    assert.equal(conditionOf(leader, 'LeaderAvailable')?.reason, 'LeaderUnschedulable');
    assert.match(
      conditionOf(leader, 'LeaderAvailable')!.message,
      /add spec\.connection\.managed\.leader\.tolerations/,
    );
    const members = await backend('no-members', 'members kept off by the taint', (b) =>
      /nvidia\.com\/gpu=present:NoSchedule/.test(conditionOf(b, 'MembersMounted')?.message ?? ''),
    );
    const said = conditionOf(members, 'MembersMounted')!;
    console.log(`no member toleration: ${said.message}`);
    assert.equal(said.reason, 'Unschedulable');
    assert.match(said.message, /add members\[0\]\.tolerations/);
  });

  it('runs a ModelDeployment role that tolerates the taint, and names the taint where one does not', async () => {
    await e.cluster.client.create(pool('gpu-pool', { backend: 'gpu-store', total: '128Mi' }));
    await e.cluster.client.create(
      binding('team-a', 'team-a', { pool: 'gpu-pool', ceiling: '64Mi', domain: null }),
    );
    await e.cluster.client.create(deployment('tolerant', true));
    await e.cluster.client.create(deployment('intolerant', false));
    const ok = await waitFor(() => md('tolerant'), {
      what: 'the tolerant deployment ready',
      until: (m) => conditionOf(m, 'RoleKindsReady')?.status === 'True',
      timeoutMs: 240_000,
    });
    assert.equal(conditionOf(ok, 'RoleKindsReady')?.reason, 'AllKindsReady');
    const stuck = await waitFor(() => md('intolerant'), {
      what: 'the deployment without the toleration to name the taint',
      until: (m) => conditionOf(m, 'RoleKindsReady')?.reason === 'Unschedulable',
      timeoutMs: 120_000,
    });
    const said = conditionOf(stuck, 'RoleKindsReady')!;
    console.log(`no role toleration: ${said.message}`);
    assert.match(said.message, /nvidia\.com\/gpu/);
    assert.match(said.message, /roles\[\]\.tolerations/);
  });
});
