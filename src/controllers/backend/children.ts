// Brings a managed backend's children to the rendered state: apply what changed, remove member groups
// that are gone, and recreate member Pods whose template fingerprint moved (OnDelete rollout).

import type { KVCacheBackend } from '../../api/types.ts';
import type { KubeObject } from '../../kube/object.ts';
import { applyChild } from '../apply.ts';
import type { OperatorContext } from '../context.ts';
import { intentConfirmation } from '../current-intent.ts';
import { componentLabel, leaderName, ownedByBackend } from './labels.ts';
import { type BackendRenderContext, renderBackend } from './render.ts';
import { podSpecHashAnnotation } from './render-members.ts';
import { type BackendInformers, byInstance, type Deployment } from './watches.ts';

export interface ChildrenOutcome {
  /** The elected template runs at one replica before the replicas are raised. */
  replicasPending: boolean;
}

/** Whether a live leader Deployment still runs a template without an election. */
function runsUnelected(d: Deployment | undefined): boolean {
  const args = d?.spec?.template?.spec?.containers?.[0]?.args ?? [];
  return args.includes('--election=None');
}

/** Leader Pods still running a template without an election (left over from before the switch). */
function unelectedPods(informers: BackendInformers, backend: KVCacheBackend): number {
  return informers.pods
    .byIndex(byInstance, backend.metadata.name!)
    .filter((p) => p.metadata.labels?.[componentLabel] === 'leader' && !p.metadata.deletionTimestamp)
    .filter((p) =>
      (
        (p as Deployment).spec as { containers?: { args?: string[] }[] } | undefined
      )?.containers?.[0]?.args?.includes('--election=None'),
    ).length;
}

export async function syncChildren(
  backend: KVCacheBackend,
  ctx: OperatorContext,
  informers: BackendInformers,
  renderCtx: Omit<BackendRenderContext, 'leaderReplicasOverride'>,
  appliedOnce: Set<string>,
): Promise<ChildrenOutcome> {
  const ns = ctx.namespace;
  const liveLeader = informers.deployments.get(leaderName(backend), ns);
  let rendered = renderBackend(backend, renderCtx);
  const wantedReplicas = (rendered.leaderDeployment as Deployment).spec?.replicas ?? 1;
  // Raising past one replica from an unelected template goes through the elected template at 1 first.
  let replicasPending = false;
  if (
    wantedReplicas > 1 &&
    liveLeader &&
    (runsUnelected(liveLeader) || unelectedPods(informers, backend) > 0)
  ) {
    rendered = renderBackend(backend, { ...renderCtx, leaderReplicasOverride: 1 });
    replicasPending = true;
  }
  const desired: KubeObject[] = [
    ...rendered.rbac,
    rendered.leaderService,
    rendered.leaderDeployment,
    ...rendered.memberDaemonSets,
  ];
  for (const obj of desired) {
    await applyChild(ctx.client, obj, liveChild(informers, obj), appliedOnce);
  }
  const current = intentConfirmation(ctx.client, backend);
  await pruneMemberGroups(backend, ctx, informers, rendered.memberDaemonSets, current);
  await rollMembers(backend, ctx, informers, rendered.memberDaemonSets, current);
  return { replicasPending };
}

function liveChild(informers: BackendInformers, obj: KubeObject): KubeObject | undefined {
  const { name, namespace } = obj.metadata;
  if (obj.kind === 'Deployment') return informers.deployments.get(name!, namespace);
  if (obj.kind === 'DaemonSet') return informers.daemonSets.get(name!, namespace);
  if (obj.kind === 'Service') return informers.services.get(name!, namespace);
  return undefined;
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

/** OnDelete rollout: a member Pod whose pod-spec hash differs from its group's template is recreated. */
async function rollMembers(
  backend: KVCacheBackend,
  ctx: OperatorContext,
  informers: BackendInformers,
  daemonSets: KubeObject[],
  current: () => Promise<boolean>,
): Promise<void> {
  const pods = informers.pods.byIndex(byInstance, backend.metadata.name!);
  for (const ds of daemonSets) {
    const template = (ds as KubeObject & { spec: { template: { metadata: KubeObject['metadata'] } } }).spec
      .template;
    const hash = template.metadata.annotations?.[podSpecHashAnnotation];
    const component = template.metadata.labels?.[componentLabel];
    for (const pod of pods) {
      if (pod.metadata.labels?.[componentLabel] !== component || pod.metadata.deletionTimestamp) continue;
      if (pod.metadata.annotations?.[podSpecHashAnnotation] === hash) continue;
      if (!(await current())) return;
      await ctx.client.delete({
        apiVersion: 'v1',
        kind: 'Pod',
        namespace: ctx.namespace,
        name: pod.metadata.name!,
      });
    }
  }
}
