// Placement on every workload kvpool renders (tolerations, node affinity, priority class, the leader's
// resources), and what a status says when a taint keeps Pods off the nodes.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { PodSpec } from 'kubernetes-types/core/v1.js';
import { podSpecHashAnnotation } from '../../src/controllers/backend/pod-spec-hash.ts';
import { renderEtcdStatefulSet } from '../../src/controllers/backend/render-etcd.ts';
import { renderLeaderDeployment } from '../../src/controllers/backend/render-leader.ts';
import { renderMemberDaemonSet } from '../../src/controllers/backend/render-members.ts';
import { unschedulableText, untoleratedTaints } from '../../src/vocabulary/placement.ts';
import { group, managedBackend } from '../builders/index.ts';

const ctx = { namespace: 'gpustack-system', defaultImage: 'kvpool/kvpool-store:test', boundNamespaces: [] };
const gpuTaint = { key: 'nvidia.com/gpu', value: 'present', effect: 'NoSchedule' };
const toleration = { key: 'nvidia.com/gpu', operator: 'Exists' as const, effect: 'NoSchedule' as const };
const affinity = {
  nodeAffinity: {
    requiredDuringSchedulingIgnoredDuringExecution: {
      nodeSelectorTerms: [{ matchExpressions: [{ key: 'gpu', operator: 'In' as const, values: ['a100'] }] }],
    },
  },
};
const placed = (withPlacement: boolean) =>
  Object.assign(
    managedBackend('placed', {
      leader: {
        replicas: 3,
        electionBackend: 'Etcd',
        ...(withPlacement
          ? {
              tolerations: [toleration],
              affinity,
              priorityClassName: 'kv-critical',
              resources: { limits: { memory: '8Gi' } },
            }
          : {}),
      },
      members: [
        group(withPlacement ? { tolerations: [toleration], affinity, priorityClassName: 'kv-critical' } : {}),
      ],
    }),
    { metadata: { name: 'placed', uid: 'u-1' } },
  );
type Spec = { spec: { template: { metadata: { annotations: Record<string, string> }; spec: PodSpec } } };

describe('placement', () => {
  it('reaches the leader, its etcd and the members as the Pod fields of the same names', () => {
    const b = placed(true);
    for (const obj of [
      renderLeaderDeployment(b, ctx),
      renderEtcdStatefulSet(b, ctx)!,
      renderMemberDaemonSet(b, 0, ctx),
    ]) {
      const pod = (obj as unknown as Spec).spec.template.spec;
      assert.deepEqual(pod.tolerations, [toleration], obj.kind);
      assert.deepEqual(pod.affinity, affinity, obj.kind);
      assert.equal(pod.priorityClassName, 'kv-critical', obj.kind);
    }
  });

  it("overrides the leader's resources one by one, keeping the defaults it does not name", () => {
    const leader = (renderLeaderDeployment(placed(true), ctx) as unknown as Spec).spec.template.spec
      .containers[0]!;
    assert.deepEqual(leader.resources, {
      requests: { cpu: '250m', memory: '256Mi' },
      limits: { memory: '8Gi' },
    });
  });

  it('restarts no member when only where members may run changes', () => {
    const hash = (b: ReturnType<typeof placed>) =>
      (renderMemberDaemonSet(b, 0, ctx) as unknown as Spec).spec.template.metadata.annotations[
        podSpecHashAnnotation
      ];
    assert.equal(hash(placed(true)), hash(placed(false)));
  });

  it("pulls every store image with the backend's own secrets and the operator-wide ones, each once", () => {
    const b = placed(false);
    b.spec.imagePullSecrets = [{ name: 'own' }, { name: 'corp' }];
    const withSecrets = { ...ctx, pullSecrets: ['corp', 'mirror'] };
    for (const obj of [
      renderLeaderDeployment(b, withSecrets),
      renderEtcdStatefulSet(b, withSecrets)!,
      renderMemberDaemonSet(b, 0, withSecrets),
    ]) {
      assert.deepEqual(
        (obj as unknown as Spec).spec.template.spec.imagePullSecrets,
        [{ name: 'own' }, { name: 'corp' }, { name: 'mirror' }],
        obj.kind,
      );
    }
  });

  it("finds the taints that keep Pods off a node, by Kubernetes' rule", () => {
    assert.deepEqual(untoleratedTaints([gpuTaint], undefined), [gpuTaint]);
    assert.deepEqual(untoleratedTaints([gpuTaint], [toleration]), []);
    assert.deepEqual(
      untoleratedTaints([gpuTaint], [{ key: 'nvidia.com/gpu', operator: 'Equal', value: 'other' }]),
      [gpuTaint],
    );
    assert.deepEqual(
      untoleratedTaints([gpuTaint], [{ operator: 'Exists' }]),
      [],
      'Exists without a key tolerates all',
    );
    assert.deepEqual(
      untoleratedTaints([{ ...gpuTaint, effect: 'PreferNoSchedule' }], undefined),
      [],
      'a preference keeps nothing off',
    );
  });

  it("names the taints the scheduler only counts, node by node, in an unschedulable Pod's message", () => {
    const said = '0/2 nodes are available: 2 node(s) had untolerated taint(s).';
    const nodes = ['gpu-1', 'gpu-2', 'cpu-1'].map((name) => ({
      metadata: { name },
      spec: { taints: name.startsWith('gpu') ? [gpuTaint] : [] },
    }));
    assert.equal(
      unschedulableText(said, undefined, nodes),
      '0/2 nodes are available: 2 node(s) had untolerated taint(s); untolerated taints: gpu-1 (nvidia.com/gpu=present:NoSchedule), gpu-2 (nvidia.com/gpu=present:NoSchedule)',
    );
    assert.match(
      unschedulableText(said, undefined, nodes, 'add leader.tolerations'),
      /NoSchedule\): add leader\.tolerations$/,
    );
    assert.equal(
      unschedulableText(said, [toleration], nodes),
      said,
      'tolerated: the message as the scheduler said it',
    );
    const many = Array.from({ length: 8 }, (_, i) => ({
      metadata: { name: `n${i}` },
      spec: { taints: [gpuTaint] },
    }));
    assert.match(
      unschedulableText(said, undefined, many),
      /n4 \(nvidia\.com\/gpu=present:NoSchedule\) and 3 more$/,
    );
  });
});
