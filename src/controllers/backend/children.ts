// Brings a managed backend's children to the rendered state: apply what changed, remove member groups
// that are gone, and roll the store without losing it: one member Pod at a time, each once the previous
// replacement has mounted its segment, and one leadership handover per leader rollout or drain.

import type { KVCacheBackend } from '../../api/types.ts';
import { stepDownAnnotation } from '../../kube/leader-election.ts';
import type { KubeObject } from '../../kube/object.ts';
import { applyChild } from '../apply.ts';
import type { OperatorContext } from '../context.ts';
import { intentConfirmation } from '../current-intent.ts';
import { electionOn } from './effective-spec.ts';
import { componentLabel, leaderComponent, leaderName, ownedByBackend } from './labels.ts';
import { podSpecHashAnnotation } from './pod-spec-hash.ts';
import type { Pod } from './pod-view.ts';
import { type BackendRenderContext, renderBackend } from './render.ts';
import { type HandoverPlan, type MemberRollPlan, planHandover, planMemberRoll } from './rollout-plan.ts';
import { type BackendInformers, byInstance, type Deployment } from './watches.ts';

export interface ChildrenOutcome {
  /** The elected template runs at one replica before the replicas are raised. */
  replicasPending: boolean;
  memberRoll: MemberRollPlan;
  handover: HandoverPlan;
}

type Template = { metadata: KubeObject['metadata'] };
const templateOf = (obj: KubeObject) => (obj as KubeObject & { spec: { template: Template } }).spec.template;
const hashOf = (o: { metadata?: KubeObject['metadata'] }) => o.metadata?.annotations?.[podSpecHashAnnotation];

/** Whether a live leader Deployment still runs a template without an election. */
function runsUnelected(d: Deployment | undefined): boolean {
  const args = d?.spec?.template?.spec?.containers?.[0]?.args ?? [];
  return args.includes('--election=None');
}

function storePods(informers: BackendInformers, backend: KVCacheBackend, component: (c: string) => boolean) {
  return informers.pods
    .byIndex(byInstance, backend.metadata.name!)
    .filter((p) => component(p.metadata.labels?.[componentLabel] ?? ''));
}

/** Leader Pods still running a template without an election (left over from before the switch). */
function unelectedPods(informers: BackendInformers, backend: KVCacheBackend): number {
  return storePods(informers, backend, (c) => c === leaderComponent)
    .filter((p) => !p.metadata.deletionTimestamp)
    .filter((p) =>
      (
        (p as Deployment).spec as { containers?: { args?: string[] }[] } | undefined
      )?.containers?.[0]?.args?.includes('--election=None'),
    ).length;
}

function handoverInput(
  backend: KVCacheBackend,
  ctx: OperatorContext,
  informers: BackendInformers,
  hash: string,
) {
  const lease = informers.leases.get(leaderName(backend), ctx.namespace);
  const pods = storePods(informers, backend, (c) => c === leaderComponent).map((p: Pod) => ({
    name: p.metadata.name!,
    hash: hashOf(p),
    podIP: p.status?.podIP,
    nodeName: p.spec?.nodeName,
    running: Boolean(
      (p.status?.containerStatuses as { state?: { running?: unknown } }[] | undefined)?.[0]?.state?.running,
    ),
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
  const wantedReplicas = (rendered.leaderDeployment as Deployment).spec?.replicas ?? 1;
  // An elected template replacing one without an election goes through one replica, recreated: an
  // unelected master and an elected one must never overlap.
  const fromUnelected =
    electionOn(backend) && liveLeader && (runsUnelected(liveLeader) || unelectedPods(informers, backend) > 0);
  // Members roll first, under the old master, which keeps their keys; the leader hands over after.
  const memberRoll = memberRollPlan(backend, informers, rendered.memberDaemonSets, mountedHosts);
  const handover = electionOn(backend)
    ? planHandover({
        ...handoverInput(backend, ctx, informers, hashOf(templateOf(rendered.leaderDeployment)) ?? ''),
        membersRolling: memberRoll.kind !== 'done',
      })
    : { stepDown: [] };
  rendered = renderBackend(backend, {
    ...renderCtx,
    ...(fromUnelected ? { leaderReplicasOverride: 1 } : {}),
    ...(handover.stepDown.length ? { leaderStepDown: handover.stepDown } : {}),
  });
  const desired: KubeObject[] = [
    ...rendered.rbac,
    ...(rendered.lease ? [rendered.lease] : []),
    rendered.leaderService,
    rendered.adminService,
    ...rendered.networkPolicies,
    rendered.disruptionBudget,
    rendered.leaderDeployment,
    ...rendered.memberDaemonSets,
  ];
  for (const obj of desired) await applied.apply(ctx, obj, liveChild(informers, obj));
  await pruneMemberGroups(backend, ctx, informers, rendered.memberDaemonSets, current);
  // After the DaemonSets carry the new template, so the replacement is made from it.
  if (memberRoll.kind === 'recreate' && (await current())) {
    await ctx.client.delete({ apiVersion: 'v1', kind: 'Pod', namespace: ns, name: memberRoll.pod });
  }
  return { replicasPending: Boolean(fromUnelected) && wantedReplicas > 1, memberRoll, handover };
}

/**
 * Applies a child unless it is unchanged: by the hash on the live object where an informer holds it,
 * else by the hash this process last applied (so an idle pass writes nothing).
 */
export class AppliedIntents {
  private readonly once = new Set<string>();
  private readonly hashes = new Map<string, string>();

  async apply(ctx: OperatorContext, obj: KubeObject, live: KubeObject | undefined | null): Promise<void> {
    const key = `${obj.kind}/${obj.metadata.namespace}/${obj.metadata.name}`;
    const hash = JSON.stringify(obj);
    if (live === null && this.hashes.get(key) === hash) return;
    await applyChild(ctx.client, obj, live ?? undefined, this.once);
    this.hashes.set(key, hash);
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
  daemonSets: KubeObject[],
  mountedHosts: ReadonlySet<string> | undefined,
): MemberRollPlan {
  const groups = daemonSets.map((ds) => {
    const live = informers.daemonSets.get(ds.metadata.name!, ds.metadata.namespace) as
      | (KubeObject & { status?: { desiredNumberScheduled?: number } })
      | undefined;
    return { hash: hashOf(templateOf(ds)) ?? '', desired: live?.status?.desiredNumberScheduled };
  });
  const pods = storePods(informers, backend, (c) => /^member-\d+$/.test(c)).map((p: Pod) => ({
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
