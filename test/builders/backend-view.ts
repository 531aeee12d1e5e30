// What the backend status decision reads of a backend in one pass (BackendView), with the store side
// read from replies recorded on a Mooncake 0.3.13.post1 master.
import { readFileSync } from 'node:fs';
import type { PodView } from '../../src/controllers/backend/pod-view.ts';
import type { BackendView, DeploymentView } from '../../src/controllers/backend/status.ts';
import { parseSegments, type Segment, type StoreObservation } from '../../src/store/observe.ts';
import { parsePrometheusText } from '../../src/store/prometheus.ts';

export const metricsFixture = (name: string) =>
  readFileSync(new URL(`../unit/fixtures/store/${name}`, import.meta.url), 'utf8');

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

export function deploymentView(over: Partial<DeploymentView>): DeploymentView {
  return { desired: 2, replicas: 2, updated: 2, ready: 2, generation: 3, observedGeneration: 3, ...over };
}

/** An external store at an Admin address that serves. */
export function externalView(over: Partial<BackendView> = {}): BackendView {
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
export function managedView(over: Partial<BackendView> = {}): BackendView {
  return externalView({
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
