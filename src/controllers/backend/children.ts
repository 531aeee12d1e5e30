// Brings a managed backend's children to the rendered state: apply what changed, remove member groups
// that are gone, and roll the store without losing it: one member Pod at a time, each once the previous
// replacement has mounted its segment, and one leadership handover per leader rollout or drain.

import type { DaemonSet } from 'kubernetes-types/apps/v1.js';
import type { Lease } from 'kubernetes-types/coordination/v1.js';
import type { PodSpec } from 'kubernetes-types/core/v1.js';
import type { ObjectMeta } from 'kubernetes-types/meta/v1.js';
import type { KVCacheBackend } from '../../api/types.ts';
import { stepDownAnnotation } from '../../kube/leader-election.ts';
import type { KubeObject } from '../../kube/object.ts';
import { applyChild, claimLiveChild } from '../../operator-io/apply.ts';
import { intentConfirmation } from '../../operator-io/current-intent.ts';
import { type BackendInformers, byInstance } from '../../operator-io/informers.ts';
import type { OperatorContext } from '../../operator-io/operator-context.ts';
import { electionOf, electionOn, leaseElection } from '../../vocabulary/backend-spec.ts';
import type { ChildConflict, ClaimOptions } from '../../vocabulary/child-ownership.ts';
import {
  componentLabel,
  leaderComponent,
  leaderName,
  ownedByBackend,
} from '../../vocabulary/store-objects.ts';
import { EtcdSecrets } from './etcd-secrets.ts';
import { podSpecHashAnnotation } from './pod-spec-hash.ts';
import { type BackendRenderContext, renderBackend } from './render.ts';
import { type HandoverPlan, type MemberRollPlan, planHandover, planMemberRoll } from './rollout-plan.ts';

export interface ChildrenOutcome {
  /** The elected template runs at one replica before the replicas are raised. */
  replicasPending: boolean;
  memberRoll: MemberRollPlan;
  handover: HandoverPlan;
  /** Children whose names objects this backend does not control hold (left alone, not applied). */
  conflicts: ChildConflict[];
}

const hashOf = (o: { metadata?: ObjectMeta } | undefined) =>
  o?.metadata?.annotations?.[podSpecHashAnnotation];

/**
 * Whether a leader's Pod spec (a live Pod's, or its Deployment's template's) runs another election than
 * `wanted`: its masters and the wanted ones must never overlap (none, the Lease and etcd each let a master
 * serve that the others do not see).
 */
function runsOtherElection(spec: PodSpec | undefined, wanted: string): boolean {
  const arg = spec?.containers[0]?.args?.find((a) => a.startsWith('--election='));
  return arg !== undefined && arg !== `--election=${wanted}`;
}

function storePods(informers: BackendInformers, backend: KVCacheBackend, component: (c: string) => boolean) {
  return informers.pods
    .byIndex(byInstance, backend.metadata.name!)
    .filter((p) => component(p.metadata.labels?.[componentLabel] ?? ''));
}

/** Leader Pods still running a template of another election (left over from before the switch). */
function otherElectionPods(informers: BackendInformers, backend: KVCacheBackend): number {
  return storePods(informers, backend, (c) => c === leaderComponent)
    .filter((p) => !p.metadata.deletionTimestamp)
    .filter((p) => runsOtherElection(p.spec, electionOf(backend))).length;
}

function handoverInput(
  backend: KVCacheBackend,
  ctx: OperatorContext,
  informers: BackendInformers,
  hash: string,
) {
  const lease = informers.leases.get(leaderName(backend), ctx.namespace);
  const pods = storePods(informers, backend, (c) => c === leaderComponent).map((p) => ({
    name: p.metadata.name!,
    hash: hashOf(p),
    podIP: p.status?.podIP,
    nodeName: p.spec?.nodeName,
    running: Boolean(p.status?.containerStatuses?.[0]?.state?.running),
    deleting: Boolean(p.metadata.deletionTimestamp),
    nodeCordoned: Boolean(p.spec?.nodeName && informers.nodes.get(p.spec.nodeName)?.spec?.unschedulable),
  }));
  return {
    hash,
    pods,
    holder: lease?.spec?.holderIdentity || undefined,
    stepDown: lease?.metadata.annotations?.[stepDownAnnotation]?.split(',').filter(Boolean) ?? [],
  };
}

export async function syncChildren(
  backend: KVCacheBackend,
  ctx: OperatorContext,
  informers: BackendInformers,
  renderCtx: Omit<BackendRenderContext, 'leaderReplicasOverride' | 'leaderStepDown'>,
  applied: AppliedIntents,
  mountedHosts: ReadonlySet<string> | undefined,
): Promise<ChildrenOutcome> {
  const ns = ctx.namespace;
  const liveLeader = informers.deployments.get(leaderName(backend), ns);
  let rendered = renderBackend(backend, renderCtx);
  const current = intentConfirmation(ctx.client, backend);
  const wantedReplicas = rendered.leaderDeployment.spec?.replicas ?? 1;
  // An elected template replacing one of another election goes through one replica, recreated: masters
  // of two elections must never overlap.
  const fromUnelected =
    electionOn(backend) &&
    liveLeader &&
    (runsOtherElection(liveLeader.spec?.template.spec, electionOf(backend)) ||
      otherElectionPods(informers, backend) > 0);
  // Members roll first, under the old master, which keeps their keys; the leader hands over after.
  const memberRoll = memberRollPlan(backend, informers, rendered.memberDaemonSets, mountedHosts);
  const handover = leaseElection(backend)
    ? planHandover({
        ...handoverInput(backend, ctx, informers, hashOf(rendered.leaderDeployment.spec?.template) ?? ''),
        membersRolling: memberRoll.kind !== 'done',
      })
    : { stepDown: [] };
  rendered = renderBackend(backend, {
    ...renderCtx,
    ...(fromUnelected ? { leaderReplicasOverride: 1 } : {}),
    ...(handover.stepDown.length ? { leaderStepDown: handover.stepDown } : {}),
  });
  await applied.etcdSecrets.ensure(backend, ctx.client, ns);
  const desired: KubeObject[] = [
    ...rendered.rbac,
    ...(rendered.lease ? [rendered.lease] : []),
    rendered.leaderService,
    rendered.adminService,
    ...rendered.networkPolicies,
    ...(rendered.etcd ? [rendered.etcd.service, rendered.etcd.statefulSet] : []),
    rendered.disruptionBudget,
    rendered.leaderDeployment,
    ...rendered.memberDaemonSets,
  ];
  const uid = backend.metadata.uid;
  const recognized = (live: KubeObject) => storeMadeLease(informers, backend, live);
  const conflicts: ChildConflict[] = [];
  for (const obj of desired) {
    const conflict = await applied.apply(ctx, obj, liveChild(informers, obj), uid, { recognized });
    if (conflict) conflicts.push(conflict);
  }
  await pruneMemberGroups(backend, ctx, informers, rendered.memberDaemonSets, current);
  // After the DaemonSets carry the new template, so the replacement is made from it.
  if (memberRoll.kind === 'recreate' && (await current())) {
    await ctx.client.delete({ apiVersion: 'v1', kind: 'Pod', namespace: ns, name: memberRoll.pod });
  }
  return { replicasPending: Boolean(fromUnelected) && wantedReplicas > 1, memberRoll, handover, conflicts };
}

/**
 * The leader Lease as the store's own leader creates it when it finds none (no owner reference): it
 * names one of this backend's leader Pods (`<pod IP>:<port>`) as holder, so it is this backend's.
 */
function storeMadeLease(informers: BackendInformers, backend: KVCacheBackend, live: KubeObject): boolean {
  if (live.kind !== 'Lease') return false;
  const holder = (live as KubeObject<Lease>).spec?.holderIdentity;
  const host = holder?.slice(0, holder.lastIndexOf(':'));
  return Boolean(
    host && storePods(informers, backend, (c) => c === leaderComponent).some((p) => p.status?.podIP === host),
  );
}

/**
 * Applies a child unless it is unchanged: by the hash on the live object where an informer holds it,
 * else by the hash this process last applied (so an idle pass writes nothing). A child whose name an
 * object the backend does not control holds is not applied: the conflict is returned.
 */
export class AppliedIntents {
  readonly etcdSecrets = new EtcdSecrets();
  private readonly once = new Set<string>();
  private readonly hashes = new Map<string, string>();

  async apply(
    ctx: OperatorContext,
    obj: KubeObject,
    cached: KubeObject | undefined | null,
    ownerUid: string | undefined,
    options?: ClaimOptions,
  ): Promise<ChildConflict | undefined> {
    const key = `${obj.kind}/${obj.metadata.namespace}/${obj.metadata.name}`;
    const hash = JSON.stringify(obj);
    if (cached === null && this.hashes.get(key) === hash) return undefined;
    const { live, conflict } = await claimLiveChild(ctx.client, obj, cached ?? undefined, ownerUid, options);
    if (conflict) {
      this.hashes.delete(key);
      return conflict;
    }
    await applyChild(ctx.client, obj, live, this.once);
    this.hashes.set(key, hash);
    return undefined;
  }

  forget(backend: string): void {
    for (const key of [...this.hashes.keys()]) if (key.includes(`/${backend}`)) this.hashes.delete(key);
  }
}

/** The live child from an informer; null for kinds no informer holds. */
function liveChild(informers: BackendInformers, obj: KubeObject): KubeObject | undefined | null {
  const { name, namespace } = obj.metadata;
  if (obj.kind === 'Deployment') return informers.deployments.get(name!, namespace);
  if (obj.kind === 'DaemonSet') return informers.daemonSets.get(name!, namespace);
  if (obj.kind === 'Service') return informers.services.get(name!, namespace);
  if (obj.kind === 'Lease') return informers.leases.get(name!, namespace);
  return null;
}

/** Deletes member DaemonSets of groups that no longer exist (groups are removed from the end). */
async function pruneMemberGroups(
  backend: KVCacheBackend,
  ctx: OperatorContext,
  informers: BackendInformers,
  wanted: KubeObject[],
  current: () => Promise<boolean>,
): Promise<void> {
  const keep = new Set(wanted.map((d) => d.metadata.name));
  for (const ds of informers.daemonSets.byIndex(byInstance, backend.metadata.name!)) {
    if (keep.has(ds.metadata.name) || !ownedByBackend(ds, backend)) continue;
    if (!(await current())) return;
    await ctx.client.delete({
      apiVersion: 'apps/v1',
      kind: 'DaemonSet',
      namespace: ctx.namespace,
      name: ds.metadata.name!,
    });
  }
}

/** The next step of the OnDelete rollout, one member Pod at a time (rollout-plan.ts decides). */
function memberRollPlan(
  backend: KVCacheBackend,
  informers: BackendInformers,
  daemonSets: KubeObject<DaemonSet>[],
  mountedHosts: ReadonlySet<string> | undefined,
): MemberRollPlan {
  const groups = daemonSets.map((ds) => {
    const live = informers.daemonSets.get(ds.metadata.name!, ds.metadata.namespace);
    return { hash: hashOf(ds.spec?.template) ?? '', desired: live?.status?.desiredNumberScheduled };
  });
  const pods = storePods(informers, backend, (c) => /^member-\d+$/.test(c)).map((p) => ({
    name: p.metadata.name!,
    group: Number(p.metadata.labels![componentLabel]!.slice('member-'.length)),
    hash: hashOf(p),
    nodeName: p.spec?.nodeName,
    podIP: p.status?.podIP,
    ready: p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false,
    deleting: Boolean(p.metadata.deletionTimestamp),
  }));
  return planMemberRoll({ groups, pods: pods.filter((p) => p.group < groups.length), mountedHosts });
}
