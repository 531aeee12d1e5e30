// Brings a managed backend's children to the rendered state: apply what changed, remove member groups
// that are gone, and roll the store without losing it: one member Pod at a time, each once the previous
// replacement has mounted its segment, and one leadership handover per leader rollout or drain.

import type { DaemonSet, Deployment } from 'kubernetes-types/apps/v1.js';
import type { Lease } from 'kubernetes-types/coordination/v1.js';
import type { Pod, PodSpec } from 'kubernetes-types/core/v1.js';
import type { ObjectMeta } from 'kubernetes-types/meta/v1.js';
import type { KVCacheBackend } from '../../api/types.ts';
import { hostPort } from '../../kube/host-port.ts';
import { stepDownAnnotation } from '../../kube/leader-election.ts';
import type { KubeObject } from '../../kube/object.ts';
import { applyChild, claimLiveChild } from '../../operator-io/apply.ts';
import { intentConfirmation } from '../../operator-io/current-intent.ts';
import { type BackendInformers, byInstance } from '../../operator-io/informers.ts';
import type { OperatorContext } from '../../operator-io/operator-context.ts';
import type { StoreObservation } from '../../store/observe.ts';
import { electionOf, electionOn, leaseElection, metadataReplicated } from '../../vocabulary/backend-spec.ts';
import type { ChildConflict, ClaimOptions } from '../../vocabulary/child-ownership.ts';
import {
  componentLabel,
  leaderComponent,
  leaderName,
  leaderProbePort,
  leaderRpcPort,
  ownedByBackend,
} from '../../vocabulary/store-objects.ts';
import { EtcdSecrets } from './etcd-secrets.ts';
import { MemberDrains, segmentsOf } from './member-drain.ts';
import { podSpecHashAnnotation } from './pod-spec-hash.ts';
import { type BackendRenderContext, renderBackend } from './render.ts';
import { type HandoverPlan, type MemberRollPlan, planHandover, planMemberRoll } from './rollout-plan.ts';
import { mountedHosts as mountedHostsOf } from './view.ts';

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
  asked: string[],
) {
  const lease = informers.leases.get(leaderName(backend), ctx.namespace);
  const leaderPods = storePods(informers, backend, (c) => c === leaderComponent);
  const pods = leaderPods.map((p) => ({
    name: p.metadata.name!,
    hash: hashOf(p),
    podIP: p.status?.podIP,
    nodeName: p.spec?.nodeName,
    running: Boolean(p.status?.containerStatuses?.[0]?.state?.running),
    deleting: Boolean(p.metadata.deletionTimestamp),
    nodeCordoned: Boolean(p.spec?.nodeName && informers.nodes.get(p.spec.nodeName)?.spec?.unschedulable),
  }));
  if (!leaseElection(backend)) {
    // etcd elects: the serving master's Pod is the ready one, and the operator asks a Pod itself.
    const serving = leaderPods.find((p) => podReady(p) && !p.metadata.deletionTimestamp);
    const ip = serving?.status?.podIP;
    return { hash, pods, holder: ip ? `${ip}:${leaderRpcPort}` : undefined, stepDown: asked };
  }
  return {
    hash,
    pods,
    holder: lease?.spec?.holderIdentity || undefined,
    stepDown: lease?.metadata.annotations?.[stepDownAnnotation]?.split(',').filter(Boolean) ?? [],
  };
}

const podReady = (p: KubeObject<Pod>) =>
  p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;

export async function syncChildren(
  backend: KVCacheBackend,
  ctx: OperatorContext,
  informers: BackendInformers,
  renderCtx: Omit<BackendRenderContext, 'leaderReplicasOverride' | 'leaderStepDown'>,
  applied: AppliedIntents,
  store: { latest?: StoreObservation; adminAddress?: string },
): Promise<ChildrenOutcome> {
  const mountedHosts = mountedHostsOf(store.latest);
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
  let memberRoll = memberRollPlan(backend, informers, rendered.memberDaemonSets, mountedHosts);
  const name = backend.metadata.name!;
  const handover = electionOn(backend)
    ? planHandover({
        ...handoverInput(
          backend,
          ctx,
          informers,
          hashOf(rendered.leaderDeployment.spec?.template) ?? '',
          applied.steppedDown(name),
        ),
        // A Lease-elected master starts empty: the old one keeps the members' keys until they have
        // rolled. A master that follows the OpLog takes the index over: the leaders go first.
        membersRolling: leaseElection(backend) && memberRoll.kind !== 'done',
      })
    : { stepDown: [] };
  if (metadataReplicated(backend))
    memberRoll = await leadersFirst(
      backend,
      applied,
      informers,
      handover,
      rendered.leaderDeployment,
      memberRoll,
    );
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
    memberRoll = await recreateMember(backend, ctx, informers, applied, store, memberRoll);
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
  readonly drains = new MemberDrains();
  /** With an etcd election: the leader Pods asked to hand over, by backend. */
  private readonly stepDowns = new Map<string, Set<string>>();

  steppedDown(backend: string): string[] {
    return [...(this.stepDowns.get(backend) ?? [])].sort();
  }

  /**
   * Asks each leader Pod named (the serving one and those that must not lead next) to hand over, on
   * every pass: a request holds for a minute (its kvpool-store runs no master meanwhile), so a Pod no
   * longer named, or whose operator is gone, runs a standby master again. Pods gone are forgotten.
   */
  async askStepDown(backend: string, names: string[], informers: BackendInformers, b: KVCacheBackend) {
    const live = new Map(
      storePods(informers, b, (c) => c === leaderComponent).map((p) => [p.metadata.name!, p]),
    );
    const asked = new Set<string>();
    for (const n of names) {
      const ip = live.get(n)?.status?.podIP;
      if (ip && (await requestStepDown(hostPort(ip, leaderProbePort)))) asked.add(n);
    }
    this.stepDowns.set(backend, asked);
  }

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

/**
 * Deletes the member Pod the roll names, so its DaemonSet recreates it from the new template. With
 * replicated metadata its segment is drained first (member-drain.ts): the index survives the roll, so
 * its objects should too. Until the drain ends, the roll waits, saying so.
 */
async function recreateMember(
  backend: KVCacheBackend,
  ctx: OperatorContext,
  informers: BackendInformers,
  applied: AppliedIntents,
  store: { latest?: StoreObservation; adminAddress?: string },
  roll: Extract<MemberRollPlan, { kind: 'recreate' }>,
): Promise<MemberRollPlan> {
  if (metadataReplicated(backend)) {
    const pod = informers.pods.get(roll.pod, ctx.namespace);
    const listing = store.latest?.segments;
    const progress = roll.message.replace(/; recreating .*$/, '');
    // Unknown is not empty: without the serving master's listing, the member waits.
    if (!store.adminAddress || !pod?.status?.podIP || !listing?.ok || !listing.value.served)
      return {
        kind: 'wait',
        message: `${progress}; waiting for the serving master's segment listing to drain ${roll.pod}`,
      };
    const segments = segmentsOf(pod.status.podIP, listing.value.segments);
    const ready = pod.status.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
    const verdict = await applied.drains.drain(store.adminAddress, roll.pod, segments, ready);
    if (!verdict.done) return { kind: 'wait', message: `${progress}; ${verdict.message}` };
    if (verdict.unmoved)
      await ctx.events.record(
        backend,
        'Warning',
        'KVCacheMemberNotDrained',
        `${verdict.message}; ${verdict.unmoved} objects could not be moved and are lost with the member`,
      );
    else
      await ctx.events.record(backend, 'Normal', 'KVCacheMemberDrained', `${verdict.message}; recreating it`);
  }
  await ctx.client.delete({ apiVersion: 'v1', kind: 'Pod', namespace: ctx.namespace, name: roll.pod });
  return roll;
}

/**
 * With replicated metadata the leaders roll first: the ones planned to hand over are asked, and a member
 * waits while any leader runs an outdated template (it drains through the master, which must not change
 * under the drain).
 */
async function leadersFirst(
  backend: KVCacheBackend,
  applied: AppliedIntents,
  informers: BackendInformers,
  handover: HandoverPlan,
  leaderDeployment: KubeObject<Deployment>,
  roll: MemberRollPlan,
): Promise<MemberRollPlan> {
  await applied.askStepDown(backend.metadata.name!, handover.stepDown, informers, backend);
  if (roll.kind !== 'recreate' || !leadersRolling(informers, backend, leaderDeployment, handover))
    return roll;
  return {
    kind: 'wait',
    message: `${roll.message.replace(/; recreating .*$/, '')}; the members roll once the leaders have`,
  };
}

/** Whether a leader Pod still runs an outdated template, or leadership is being handed over. */
function leadersRolling(
  informers: BackendInformers,
  backend: KVCacheBackend,
  wanted: KubeObject<Deployment>,
  handover: HandoverPlan,
): boolean {
  const hash = hashOf(wanted.spec?.template);
  const leaders = storePods(informers, backend, (c) => c === leaderComponent).filter(
    (p) => !p.metadata.deletionTimestamp,
  );
  return handover.stepDown.length > 0 || leaders.some((p) => hashOf(p) !== hash);
}

/** How long one request to hand over holds; the operator renews it on every pass (15 s at most apart). */
const stepDownHoldSeconds = 60;

/** POST /step-down on a leader's probe port; whether it answered that it steps down. */
async function requestStepDown(address: string): Promise<boolean> {
  try {
    const res = await fetch(`http://${address}/step-down?seconds=${stepDownHoldSeconds}`, {
      method: 'POST',
      signal: AbortSignal.timeout(2000),
    });
    return res.ok;
  } catch {
    return false;
  }
}
