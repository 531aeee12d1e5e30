// Gathers what the backend's status is decided from: the store's latest observation and the
// cluster objects of the backend, all from caches (no API reads).
import type { Node, Pod } from 'kubernetes-types/core/v1.js';
import { BackendCondition, BackendReason } from '../../api/kvcache-backend-conditions.ts';
import type { UsedByEntry } from '../../api/schema.ts';
import type { KVCacheBackend } from '../../api/types.ts';
import type { KubeObject } from '../../kube/object.ts';
import { ordinal } from '../../kube/ordinal.ts';
import {
  type BackendInformers,
  byBackend,
  byInstance,
  byInvolvedUid,
  byPool,
} from '../../operator-io/informers.ts';
import type { OperatorContext } from '../../operator-io/operator-context.ts';
import type { StoreObservation } from '../../store/observe.ts';
import { anyDiskTier, electionOf, electionOn, managedConnection } from '../../vocabulary/backend-spec.ts';
import type { ChildConflict } from '../../vocabulary/child-ownership.ts';
import { nameList } from '../../vocabulary/conditions.ts';
import { taintText, untoleratedTaints } from '../../vocabulary/placement.ts';
import {
  componentLabel,
  leaderName,
  memberComponent,
  memberDaemonSetName,
  ownedByBackend,
} from '../../vocabulary/store-objects.ts';
import { viewPod } from './pod-view.ts';
import type { MemberRollPlan } from './rollout-plan.ts';
import { type BackendView, endpointHost } from './status.ts';
import { decideTierRefusal, decideTierWasEmpty, firstMembers, readSurvey } from './tier-survey.ts';

/** Pools naming this backend, including those still tearing down: each holds the backend until gone. */
export function backendUsedBy(informers: BackendInformers, backend: string): UsedByEntry[] {
  return informers.pools
    .byIndex(byBackend, backend)
    .map((p) => ({ kind: 'KVCachePool', namespace: '', name: p.metadata.name! }))
    .sort((a, b) => ordinal(a.name, b.name));
}

/**
 * The namespaces holding a Binding to a pool on this backend, sorted: their Pods may reach the store.
 * A Binding counts until it is gone (its engines run while it drains), whatever its phase.
 */
export function boundNamespaces(informers: BackendInformers, backend: string): string[] {
  const pools = informers.pools.byIndex(byBackend, backend);
  const bindings = pools.flatMap((p) => informers.bindings.byIndex(byPool, p.metadata.name!));
  return [...new Set(bindings.map((b) => b.metadata.namespace!))].sort();
}

/** Hosts the master lists a segment from, in its latest listing; undefined without one. */
export function mountedHosts(store: StoreObservation | undefined): ReadonlySet<string> | undefined {
  const listing = store?.segments;
  if (!listing?.ok || !listing.value.served) return undefined;
  return new Set(listing.value.segments.flatMap((s) => endpointHost(s.teEndpoint) ?? []));
}

/** TierWasEmpty from the first member Pods of the groups that declare a tier (decided once), or a refusal from any. */
function tierVerdict(backend: KVCacheBackend, informers: BackendInformers, pods: KubeObject<Pod>[]) {
  const groups = managedConnection(backend)
    .members.map((g, i) => (g.localDisks?.length ? i : -1))
    .filter((i) => i >= 0);
  if (groups.length === 0) return undefined;
  const previous = backend.status?.conditions?.find((c) => c.type === BackendCondition.TierWasEmpty);
  const inGroups = pods.filter((p) =>
    groups.some((i) => p.metadata.labels?.[componentLabel] === memberComponent(i)),
  );
  const refusal = decideTierRefusal(
    inGroups.flatMap((p) => readSurvey(p) ?? []),
    `spec.connection.managed.members[${groups[0]}].localDisks[0]`,
    backend.metadata.uid ?? '',
  );
  if (refusal) return refusal;
  const readings = firstMembers(inGroups, backend.metadata.creationTimestamp).flatMap(
    (p) => readSurvey(p) ?? [],
  );
  const desired = groups
    .map((i) =>
      informers.daemonSets.get(memberDaemonSetName(backend, i), inGroups[0]?.metadata.namespace ?? ''),
    )
    .reduce((n, ds) => n + (ds?.status?.desiredNumberScheduled ?? 0), 0);
  return decideTierWasEmpty(readings, desired, previous);
}

export function buildBackendView(
  backend: KVCacheBackend,
  ctx: OperatorContext,
  informers: BackendInformers,
  extra: {
    adminAddress?: string;
    store?: StoreObservation;
    renderProblem?: string;
    conflicts?: ChildConflict[];
    replicasPending?: boolean;
    memberRoll?: MemberRollPlan;
    handover?: string;
  },
): BackendView {
  const name = backend.metadata.name!;
  const managed = Boolean(backend.spec.connection.managed);
  const pods = managed ? informers.pods.byIndex(byInstance, name) : [];
  const leaderPods = pods
    .filter((p) => p.metadata.labels?.[componentLabel] === 'leader')
    .map((p) => viewPod(p, 'Leader', undefined, informers.nodes.list()));
  const memberPods = pods.flatMap((p) => {
    const m = /^member-(\d+)$/.exec(p.metadata.labels?.[componentLabel] ?? '');
    if (!m) return [];
    const node = p.spec?.nodeName ? informers.nodes.get(p.spec.nodeName) : undefined;
    const view = { ...viewPod(p, 'Member', node), group: Number(m[1]) };
    // A mount the kubelet cannot make keeps the Pod "creating"; only its Warning event says why.
    const failed = informers.mountFailures.byIndex(byInvolvedUid, p.metadata.uid ?? '').at(-1);
    if (!view.ready && !view.fault && failed?.message)
      view.fault = { reason: BackendReason.FailedMount, message: failed.message };
    return [view];
  });
  // Another object holding the leader Deployment's name is not this backend's leader.
  const leader = managed ? informers.deployments.get(leaderName(backend), ctx.namespace) : undefined;
  const deployment = leader && ownedByBackend(leader, backend) ? leader : undefined;
  const lease = managed ? informers.leases.get(leaderName(backend), ctx.namespace) : undefined;
  return {
    managed,
    deleting: Boolean(backend.metadata.deletionTimestamp),
    usedBy: backendUsedBy(informers, name),
    renderProblem: extra.renderProblem,
    conflicts: extra.conflicts,
    adminAddress: extra.adminAddress,
    store: extra.store,
    includeFiles: !managed || anyDiskTier(backend),
    leaderPods,
    memberPods,
    groupMedium: managed ? managedConnection(backend).members.map((m) => m.medium) : [],
    deployment: deployment && {
      desired: deployment.spec?.replicas ?? 1,
      replicas: deployment.status?.replicas ?? 0,
      updated: deployment.status?.updatedReplicas ?? 0,
      ready: deployment.status?.readyReplicas ?? 0,
      generation: deployment.metadata.generation ?? 0,
      observedGeneration: deployment.status?.observedGeneration ?? 0,
    },
    replicasPending: extra.replicasPending,
    memberRoll: extra.memberRoll,
    handover: extra.handover,
    election: managed && electionOn(backend),
    ...(managed ? { electionBackend: electionOf(backend) } : {}),
    lease: lease ? { holder: lease.spec?.holderIdentity || undefined } : undefined,
    previousMembers: backend.status?.members,
    ...(managed ? { placementGaps: placementGaps(backend, informers.nodes.list()) } : {}),
    tierWasEmpty: managed ? tierVerdict(backend, informers, pods) : undefined,
  };
}

/** Nodes a member group's selector matches that carry a taint the group does not tolerate: no member runs there. */
function placementGaps(backend: KVCacheBackend, nodes: KubeObject<Node>[]): string[] {
  return managedConnection(backend).members.flatMap((group, i) => {
    const selected = nodes.filter((n) =>
      Object.entries(group.nodeSelector).every(([k, v]) => n.metadata.labels?.[k] === v),
    );
    const kept = selected.flatMap((n) => {
      const taints = untoleratedTaints(n.spec?.taints, group.tolerations);
      return taints.length ? [`${n.metadata.name} (${taints.map(taintText).join(', ')})`] : [];
    });
    return kept.length
      ? [
          `members[${i}]: ${nameList(kept)} match its nodeSelector but carry a taint it does not tolerate, so no member runs there; add members[${i}].tolerations`,
        ]
      : [];
  });
}
