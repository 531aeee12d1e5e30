// The ModelDeployment controller: renders each role's Deployment and the Services, injects the cache
// connection its Binding resolves to (none at all while the pool is unusable, keeping running replicas
// as they are), and reports roles, the cache and its conditions.

import type { DeploymentSpec } from 'kubernetes-types/apps/v1.js';
import { ReplicasUpToDateReason } from '../../api/model-deployment.ts';
import { ModelDeploymentCondition, ModelDeploymentReason } from '../../api/model-deployment-conditions.ts';
import type { InstanceType, ModelDeployment } from '../../api/types.ts';
import { injectedAnnotation } from '../../inject/types.ts';
import { Controller, type ReconcileResult, splitKey } from '../../kube/controller.ts';
import type { KubeObject } from '../../kube/object.ts';
import {
  applyChild,
  applyOwnedChild,
  applyStatus,
  claimLiveChild,
  ensureFinalizer,
  removeFinalizer,
} from '../../operator-io/apply.ts';
import { intentConfirmation } from '../../operator-io/current-intent.ts';
import { byInstanceNs, type DeploymentInformers, deploymentInformers } from '../../operator-io/informers.ts';
import type { OperatorContext } from '../../operator-io/operator-context.ts';
import { type ChildConflict, claimChild } from '../../vocabulary/child-ownership.ts';
import { type DecidedCondition, mergeConditions } from '../../vocabulary/conditions.ts';
import { isTakeOver, servingPort } from '../../vocabulary/engine-roles.ts';
import { fieldManagers } from '../../vocabulary/identity.ts';
import { unschedulableText } from '../../vocabulary/placement.ts';
import { parseQuantityBytes } from '../../vocabulary/quantity.ts';
import { poolRuntimeVersions } from '../../vocabulary/runner-image.ts';
import { resolveCache } from './connection.ts';
import { renderModelDeployment } from './render.ts';
import { componentLabel, roleKind, roleObjectName } from './render-labels.ts';
import { decideDeployment, type RoleView } from './status.ts';
import { wireDeploymentWatches } from './watches.ts';

export class ModelDeploymentReconciler {
  readonly controller: Controller;
  private readonly ctx: OperatorContext;
  private readonly informers: DeploymentInformers;
  private readonly appliedOnce = new Set<string>();

  constructor(ctx: OperatorContext) {
    this.ctx = ctx;
    this.informers = deploymentInformers(ctx);
    this.controller = new Controller({
      name: 'modeldeployment',
      concurrency: 2,
      reconcile: (key) => this.reconcile(key),
    });
    wireDeploymentWatches(this.controller, this.informers, ctx);
  }

  private owned(md: ModelDeployment) {
    const key = `${md.metadata.namespace}/${md.metadata.name}`;
    const mine = (o: KubeObject) =>
      o.metadata.ownerReferences?.some((r) => r.uid === md.metadata.uid) ?? false;
    return {
      deployments: this.informers.workloads.byIndex(byInstanceNs, key).filter(mine),
      services: this.informers.engineServices.byIndex(byInstanceNs, key).filter(mine),
      pods: this.informers.enginePods.byIndex(byInstanceNs, key),
    };
  }

  async reconcile(key: string): Promise<ReconcileResult | undefined> {
    const { namespace, name } = splitKey(key);
    const md = this.informers.modelDeployments.get(name, namespace);
    if (!md) {
      this.ctx.replicas.unfollow(key);
      return undefined;
    }
    if (md.metadata.deletionTimestamp) return this.teardown(md);
    await ensureFinalizer(this.ctx.client, md);

    const i = this.informers;
    const binding = md.spec.kvCache ? i.bindings.get(md.spec.kvCache.poolRef.name, namespace) : undefined;
    const pool = binding ? i.pools.get(binding.spec.poolRef.name) : undefined;
    const backend = pool ? i.backends.get(pool.spec.backends[0]!) : undefined;
    const cache = resolveCache(md, binding, pool, backend);
    const instanceTypes = new Map(i.instanceTypes.list().map((t) => [t.metadata.name!, t]));
    let rendered: ReturnType<typeof renderModelDeployment> | undefined;
    let renderFailure: string | undefined;
    try {
      rendered = renderModelDeployment(md, {
        instanceTypes,
        connection: cache.connection,
        dtypeOwned: this.ctx.settings.bool('model-deployment-kv-cache-dtype-owned'),
        overcommit: this.ctx.settings.bool('instance-general-resources-overcommit'),
        runtimeVersions: await this.runtimeVersions(md, instanceTypes),
      });
    } catch (err) {
      // Nothing can be applied: the status and an event say why, and the replicas run as they are.
      renderFailure = err instanceof Error ? err.message : String(err);
      await this.ctx.events.record(md, 'Warning', ModelDeploymentReason.RenderFailed, renderFailure);
    }
    const { heldByCache, conflicts } = rendered
      ? await this.applyChildren(md, rendered, Boolean(cache.connection))
      : { heldByCache: false, conflicts: [] };

    const roles = this.roleViews(md);
    // Replicas are read by the watcher, which wakes this pass when what they report changes.
    this.ctx.replicas.follow(key, md.spec.kvCache ? this.readyReplicaEndpoints(md) : [], () =>
      this.controller.enqueue(key),
    );
    const usage = binding?.status?.usage;
    const d = decideDeployment({
      md,
      roles,
      cache,
      heldByCache,
      reports: md.spec.kvCache ? this.ctx.replicas.latest(key) : undefined,
      domainUsageBytes: usage === undefined ? undefined : Number(parseQuantityBytes(usage)),
      renderFailure,
      conflicts,
    });
    await this.noteConflict(md, d.conditions);
    await applyStatus(this.ctx.client, md, {
      phase: d.phase,
      phaseMessage: d.phaseMessage,
      conditions: mergeConditions(md.status?.conditions, d.conditions, md.metadata.generation, new Date()),
      ...d.status,
    });
    return { requeueAfterMs: renderFailure ? 30_000 : 15_000 };
  }

  /**
   * Applies the rendered children but those whose name an object it does not control holds (returned,
   * left alone); heldByCache when replicas were kept as they run (no cache connection).
   */
  private async applyChildren(
    md: ModelDeployment,
    rendered: ReturnType<typeof renderModelDeployment>,
    connected: boolean,
  ): Promise<{ heldByCache: boolean; conflicts: ChildConflict[] }> {
    const namespace = md.metadata.namespace!;
    const i = this.informers;
    const uid = md.metadata.uid;
    let heldByCache = false;
    const conflicts: ChildConflict[] = [];
    for (const d of rendered.deployments) {
      const cached = i.workloads.get(d.metadata.name!, namespace);
      const { live, conflict } = await claimLiveChild(this.ctx.client, d, cached, uid);
      if (conflict) {
        conflicts.push(conflict);
        continue;
      }
      const liveInjected = Boolean(live?.spec?.template?.metadata?.annotations?.[injectedAnnotation]);
      if (md.spec.kvCache && !connected && live && liveInjected) {
        // No connection this pass: keep the replicas as they run (a store blink must not restart them all).
        heldByCache = true;
        const replicas = d.spec?.replicas;
        // The count alone, applied by its own field manager: the template stays as it runs.
        const count: KubeObject<{ spec: Pick<DeploymentSpec, 'replicas'> }> = {
          apiVersion: 'apps/v1',
          kind: 'Deployment',
          metadata: { name: d.metadata.name, namespace },
          spec: { replicas },
        };
        if (live.spec?.replicas !== replicas)
          await this.ctx.client.apply(count, { fieldManager: fieldManagers.replicas });
        continue;
      }
      await applyChild(this.ctx.client, d, live, this.appliedOnce);
    }
    for (const s of rendered.services) {
      const cached = i.engineServices.get(s.metadata.name!, namespace);
      const conflict = await applyOwnedChild(this.ctx.client, s, cached, this.appliedOnce, uid);
      if (conflict) conflicts.push(conflict);
    }
    await this.prune(md, rendered.deployments, rendered.services);
    return { heldByCache, conflicts };
  }

  /** One Warning event when a child's name is first found held by an object kvpool does not control. */
  private async noteConflict(md: ModelDeployment, conditions: DecidedCondition[]): Promise<void> {
    const was = md.status?.conditions?.find(
      (c) => c.type === ModelDeploymentCondition.ReplicasUpToDate,
    )?.reason;
    const now = conditions.find((c) => c.type === ModelDeploymentCondition.ReplicasUpToDate);
    if (now?.reason !== ReplicasUpToDateReason.ChildConflict || was === now.reason) return;
    await this.ctx.events.record(md, 'Warning', now.reason, now.message);
  }

  /** The lowest runtime version of each InstanceType a role without an image runs on; skew is reported. */
  private async runtimeVersions(md: ModelDeployment, types: Map<string, InstanceType>) {
    const out = new Map<string, string>();
    const nodes = this.informers.nodes.list();
    for (const role of md.spec.roles) {
      const type = types.get(role.instanceType);
      if (!type || role.image || md.spec.engine.image || out.has(role.instanceType)) continue;
      const versions = poolRuntimeVersions(type, nodes);
      if (versions[0]) out.set(role.instanceType, versions[0]);
      if (versions.length > 1)
        await this.ctx.events.record(
          md,
          'Warning',
          'RuntimeVersionSkew',
          `the nodes of InstanceType ${role.instanceType} run accelerator runtimes ${versions.join(', ')}; role ${role.name}'s image is tagged for the lowest, ${versions[0]}`,
        );
    }
    return out;
  }

  private roleViews(md: ModelDeployment): RoleView[] {
    return md.spec.roles.map((role) => {
      const cached = this.informers.workloads.get(roleObjectName(md, role), md.metadata.namespace);
      // Another object holding the name is not this role's: its replicas are not counted.
      const live = claimChild(cached, md.metadata.uid).kind === 'ours' ? cached : undefined;
      const current = (live?.status?.observedGeneration ?? 0) >= (live?.metadata.generation ?? 1);
      const unschedulable = this.unschedulable(md, role.name);
      return {
        name: role.name,
        kind: roleKind(role),
        desired: role.replicas ?? 1,
        ready: live?.status?.readyReplicas ?? 0,
        updated: current ? (live?.status?.updatedReplicas ?? 0) : 0,
        unmanaged: isTakeOver(role),
        ...(unschedulable ? { unschedulable } : {}),
      };
    });
  }

  /** The scheduler's word on a Pod of the role it cannot place (an untolerated taint, no room), if any. */
  private unschedulable(md: ModelDeployment, role: string): string | undefined {
    for (const p of this.owned(md).pods) {
      if (p.metadata.labels?.[componentLabel] !== role || p.metadata.deletionTimestamp) continue;
      const scheduled = p.status?.conditions?.find((c) => c.type === 'PodScheduled');
      if (scheduled?.status === 'False' && scheduled.reason === ModelDeploymentReason.Unschedulable)
        return unschedulableText(
          scheduled.message ?? 'no node fits the Pod',
          p.spec?.tolerations,
          this.informers.nodes.list(),
        );
    }
    return undefined;
  }

  /** `ip:port` of every ready replica, each on the port its own role serves on. */
  private readyReplicaEndpoints(md: ModelDeployment): string[] {
    const roles = new Map(md.spec.roles.map((r) => [r.name, r]));
    return this.owned(md).pods.flatMap((p) => {
      const role = roles.get(p.metadata.labels?.[componentLabel] ?? '');
      const ready = p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True');
      return role && ready && p.status?.podIP ? [`${p.status.podIP}:${servingPort(role)}`] : [];
    });
  }

  /** Removes Deployments and Services of roles that no longer exist. */
  private async prune(md: ModelDeployment, deployments: KubeObject[], services: KubeObject[]) {
    const keep = new Set([...deployments, ...services].map((o) => `${o.kind}/${o.metadata.name}`));
    const owned = this.owned(md);
    const current = intentConfirmation(this.ctx.client, md);
    for (const o of [...owned.deployments, ...owned.services]) {
      if (keep.has(`${o.kind}/${o.metadata.name}`)) continue;
      if (!(await current())) return;
      await this.ctx.client.delete({
        apiVersion: o.apiVersion,
        kind: o.kind,
        namespace: md.metadata.namespace,
        name: o.metadata.name!,
      });
    }
  }

  /** The finalizer holds the Binding (via usedBy) until the replicas are gone. */
  private async teardown(md: ModelDeployment): Promise<ReconcileResult | undefined> {
    this.ctx.replicas.unfollow(`${md.metadata.namespace}/${md.metadata.name}`);
    const owned = this.owned(md);
    for (const o of [...owned.deployments, ...owned.services]) {
      if (!o.metadata.deletionTimestamp) {
        await this.ctx.client.delete(
          {
            apiVersion: o.apiVersion,
            kind: o.kind,
            namespace: md.metadata.namespace,
            name: o.metadata.name!,
          },
          { propagationPolicy: 'Background' },
        );
      }
    }
    if (owned.deployments.length || owned.pods.length) return { requeueAfterMs: 2000 };
    await removeFinalizer(this.ctx.client, md);
    return undefined;
  }
}
