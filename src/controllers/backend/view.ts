// Gathers what the backend's status is decided from: the store's latest observation and the
// cluster objects of the backend, all from caches (no API reads).
import type { UsedByEntry } from '../../api/schema.ts';
import type { KVCacheBackend } from '../../api/types.ts';
import type { StoreObservation } from '../../store/observe.ts';
import type { OperatorContext } from '../context.ts';
import { anyDiskTier, electionOn, managedConnection } from './effective-spec.ts';
import {
  adminServiceName,
  componentLabel,
  leaderName,
  memberComponent,
  memberDaemonSetName,
} from './labels.ts';
import { type Pod, viewPod } from './pod-view.ts';
import { leaderAdminPort } from './render-leader.ts';
import type { MemberRollPlan } from './rollout-plan.ts';
import { type BackendView, endpointHost, type MemberRow } from './status.ts';
import { decideTierWasEmpty, firstMembers, readSurvey } from './tier-survey.ts';
import { type BackendInformers, byBackend, byInstance, byInvolvedUid, byService } from './watches.ts';

/** Pools naming this backend, including those still tearing down: each holds the backend until gone. */
export function backendUsedBy(informers: BackendInformers, backend: string): UsedByEntry[] {
  return informers.pools
    .byIndex(byBackend, backend)
    .map((p) => ({ kind: 'KVCachePool', namespace: '', name: p.metadata.name! }))
    .sort((a, b) => a.name.localeCompare(b.name));
}

/** host:port of the managed leader's admin endpoint: a ready leader Pod behind the admin Service. */
export function managedAdminAddress(
  informers: BackendInformers,
  backend: KVCacheBackend,
  holder?: string,
): string | undefined {
  const ready: string[] = [];
  for (const slice of informers.slices.byIndex(byService, adminServiceName(backend))) {
    const port = slice.ports?.find((p) => p.name === 'admin')?.port ?? leaderAdminPort;
    for (const e of slice.endpoints ?? []) {
      if (e.conditions?.ready && e.addresses[0]) ready.push(`${e.addresses[0]}:${port}`);
    }
  }
  ready.sort();
  // While a failover briefly shows two ready replicas, the Lease holder is the one serving.
  const holderHost = holder?.split(':')[0];
  return ready.find((a) => a.split(':')[0] === holderHost) ?? ready[0];
}

/** Hosts the master lists a segment from, in its latest listing; undefined without one. */
export function mountedHosts(store: StoreObservation | undefined): ReadonlySet<string> | undefined {
  const listing = store?.segments;
  if (!listing?.ok || !listing.value.served) return undefined;
  return new Set(listing.value.segments.flatMap((s) => endpointHost(s.teEndpoint) ?? []));
}

export function externalAdminAddress(backend: KVCacheBackend): string | undefined {
  return backend.spec.connection.external?.endpoints.find((e) => e.name === 'Admin')?.address;
}

export function leaseHolder(
  informers: BackendInformers,
  backend: KVCacheBackend,
  namespace: string,
): string | undefined {
  return informers.leases.get(leaderName(backend), namespace)?.spec?.holderIdentity || undefined;
}

/** TierWasEmpty from the first member Pods of the groups that declare a tier (decided once). */
function tierVerdict(backend: KVCacheBackend, informers: BackendInformers, pods: Pod[]) {
  const groups = managedConnection(backend)
    .members.map((g, i) => (g.localDisks?.length ? i : -1))
    .filter((i) => i >= 0);
  if (groups.length === 0) return undefined;
  const previous = backend.status?.conditions?.find((c) => c.type === 'TierWasEmpty');
  const inGroups = pods.filter((p) =>
    groups.some((i) => p.metadata.labels?.[componentLabel] === memberComponent(i)),
  );
  const readings = firstMembers(inGroups, backend.metadata.creationTimestamp).flatMap(
    (p) => readSurvey(p) ?? [],
  );
  const desired = groups
    .map(
      (i) =>
        informers.daemonSets.get(memberDaemonSetName(backend, i), inGroups[0]?.metadata.namespace ?? '') as
          | { status?: { desiredNumberScheduled?: number } }
          | undefined,
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
    .map((p) => viewPod(p, 'Leader'));
  const memberPods = pods.flatMap((p) => {
    const m = /^member-(\d+)$/.exec(p.metadata.labels?.[componentLabel] ?? '');
    if (!m) return [];
    const view = { ...viewPod(p, 'Member'), group: Number(m[1]) };
    // A mount the kubelet cannot make keeps the Pod "creating"; only its Warning event says why.
    const failed = informers.mountFailures.byIndex(byInvolvedUid, p.metadata.uid ?? '').at(-1);
    if (!view.ready && !view.fault && failed?.message)
      view.fault = { reason: 'FailedMount', message: failed.message };
    return [view];
  });
  const deployment = managed ? informers.deployments.get(leaderName(backend), ctx.namespace) : undefined;
  const lease = managed ? informers.leases.get(leaderName(backend), ctx.namespace) : undefined;
  return {
    managed,
    deleting: Boolean(backend.metadata.deletionTimestamp),
    usedBy: backendUsedBy(informers, name),
    renderProblem: extra.renderProblem,
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
    lease: lease ? { holder: lease.spec?.holderIdentity || undefined } : undefined,
    previousMembers: backend.status?.members as MemberRow[] | undefined,
    tierWasEmpty: managed ? tierVerdict(backend, informers, pods) : undefined,
  };
}
