// Hand-built BackendView inputs for the backend status tests, with the store side read from replies
// recorded on a Mooncake 0.3.13.post1 master.
import { readFileSync } from 'node:fs';
import type { ContainerStatus, Node, Pod as PodKind } from 'kubernetes-types/core/v1.js';
import type { PodView } from '../../src/controllers/backend/pod-view.ts';
import type { KubeObject } from '../../src/kube/object.ts';

type Pod = KubeObject<PodKind>;

import type {
  BackendStatusDecision,
  BackendView,
  DeploymentView,
} from '../../src/controllers/backend/status.ts';
import { parseSegments, type Segment, type StoreObservation } from '../../src/store/observe.ts';
import { parsePrometheusText } from '../../src/store/prometheus.ts';

export const metricsFixture = (name: string) =>
  readFileSync(new URL(`./fixtures/store/${name}`, import.meta.url), 'utf8');

export const twoSegments = (): Segment[] => parseSegments(metricsFixture('segments-two-members.json'));

/** A serving master with two mounted members, as recorded. */
export function observation(over: Partial<StoreObservation> = {}): StoreObservation {
  return {
    address: '10.0.0.9:9003',
    at: 0,
    health: { ok: true, value: { serviceReady: true } },
    metrics: { ok: true, value: parsePrometheusText(metricsFixture('metrics-two-members-tenant.txt')) },
    segments: { ok: true, value: { served: true, segments: twoSegments() } },
    ...over,
  };
}

export function leaderPod(over: Partial<PodView> = {}): PodView {
  return { name: 'kv-leader-7d9f', ready: true, podIP: '10.0.0.9', nodeName: 'n1', deleting: false, ...over };
}

export function memberPod(
  name: string,
  podIP: string,
  nodeName: string,
  over: Partial<PodView & { group: number }> = {},
): PodView & { group: number } {
  return { name, ready: true, podIP, nodeName, deleting: false, group: 0, ...over };
}

export const membersAtRecordedIps = () => [
  memberPod('kv-member-0-a', '127.0.0.2', 'n1'),
  memberPod('kv-member-0-b', '127.0.0.3', 'n2'),
];

export function deployment(over: Partial<DeploymentView>): DeploymentView {
  return { desired: 2, replicas: 2, updated: 2, ready: 2, generation: 3, observedGeneration: 3, ...over };
}

/** An external store at an Admin address that serves. */
export function external(over: Partial<BackendView> = {}): BackendView {
  return {
    managed: false,
    deleting: false,
    usedBy: [],
    adminAddress: 'mooncake.example:9003',
    store: observation(),
    includeFiles: true,
    leaderPods: [],
    memberPods: [],
    groupMedium: [],
    election: false,
    ...over,
  };
}

/** A managed backend with a ready, elected leader and one DRAM member group on n1 and n2. */
export function managed(over: Partial<BackendView> = {}): BackendView {
  return external({
    managed: true,
    adminAddress: '10.0.0.9:9003',
    includeFiles: false,
    leaderPods: [leaderPod()],
    memberPods: membersAtRecordedIps(),
    groupMedium: ['DRAM'],
    election: true,
    lease: { holder: 'kv-leader-7d9f' },
    ...over,
  });
}

/** The status and reason of one condition, or undefined when it is absent. */
export function condition(d: BackendStatusDecision, type: string) {
  const c = d.conditions.find((x) => x.type === type);
  return c && { status: c.status, reason: c.reason };
}

export function message(d: BackendStatusDecision, type: string): string {
  return d.conditions.find((x) => x.type === type)?.message ?? '';
}

/** A container's status as the kubelet reports it, with what these tests leave out filled in. */
export function containerStatus(s: Partial<ContainerStatus> & { name: string }): ContainerStatus {
  return { image: 'kvpool-store', imageID: '', ready: false, restartCount: 0, ...s };
}

export function pod(name: string, status: Pod['status'], over: Partial<Pod['metadata']> = {}): Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: 'gpustack-system', ...over },
    spec: { nodeName: 'n1', containers: [] },
    status: { podIP: '10.0.0.20', ...status },
  };
}

const notReady = [{ type: 'Ready', status: 'False', reason: 'ContainersNotReady' }];

export function waitingPod(name: string, reason: string, message?: string): Pod {
  return pod(name, {
    phase: 'Pending',
    conditions: notReady,
    containerStatuses: [containerStatus({ name: 'store', state: { waiting: { reason, message } } })],
  });
}

export function crashLoopingPod(name: string): Pod {
  return pod(name, {
    phase: 'Running',
    conditions: notReady,
    containerStatuses: [
      containerStatus({
        name: 'store',
        restartCount: 6,
        state: {
          waiting: { reason: 'CrashLoopBackOff', message: 'back-off 5m0s restarting failed container' },
        },
        lastState: { terminated: { exitCode: 1, reason: 'Error' } },
      }),
    ],
  });
}

/** A node whose kubelet stopped reporting: the node controller's Unknown, as after the node died. */
export function nodeNotReporting(name: string): KubeObject<Node> {
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: { name },
    status: {
      conditions: [
        {
          type: 'Ready',
          status: 'Unknown',
          reason: 'NodeStatusUnknown',
          message: 'Kubelet stopped posting node status.',
        },
      ],
    },
  };
}

export function readyNode(name: string): KubeObject<Node> {
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: { name },
    status: { conditions: [{ type: 'Ready', status: 'True', reason: 'KubeletReady' }] },
  };
}
