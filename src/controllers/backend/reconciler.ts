// The KVCacheBackend controller: render and apply the managed store, observe what the store reports,
// and write conditions, phase, capacity and members. A pass that changes nothing writes nothing.
import { RolloutCompleteReason } from '../../api/kvcache-backend.ts';
import type { UsedByEntry } from '../../api/schema.ts';
import type { KVCacheBackend } from '../../api/types.ts';
import { Controller, type ReconcileResult } from '../../kube/controller.ts';
import { hostPort } from '../../kube/host-port.ts';
import type { KubeObject } from '../../kube/object.ts';
import { ordinal } from '../../kube/ordinal.ts';
import { applyStatus, ensureFinalizer } from '../../operator-io/apply.ts';
import { type BackendInformers, backendInformers, byInstance } from '../../operator-io/informers.ts';
import { externalAdminAddress, leaseHolder, managedAdminAddress } from '../../operator-io/master-address.ts';
import type { OperatorContext } from '../../operator-io/operator-context.ts';
import { sightingOf } from '../../store/master-sighting.ts';
import { readMemberTier } from '../../store/member-tier.ts';
import { readEtcdMember, readStandby } from '../../store/replication.ts';
import {
  groupDisk,
  managedConnection,
  metadataReplicated,
  resolveEtcd,
} from '../../vocabulary/backend-spec.ts';
import { mergeConditions } from '../../vocabulary/conditions.ts';
import {
  adminServiceName,
  componentLabel,
  etcdComponent,
  etcdMetricsPort,
  leaderAdminPort,
  leaderName,
  leaderRpcPort,
  memberTierStatusPort,
  ownedByBackend,
} from '../../vocabulary/store-objects.ts';
import { AppliedIntents, type ChildrenOutcome, syncChildren } from './children.ts';
import { type BackendStatusDecision, decideBackendStatus } from './status.ts';
import { advanceFailover, type FailoverMemory } from './status-failover.ts';
import { decideReplication, type ReplicationFigures } from './status-replication.ts';
import type { BackendView } from './status-view.ts';
import { backendInUseLive, teardownBackend, teardownPollMs } from './teardown.ts';
import { TierCleanup } from './tier-cleanup.ts';
import { decideTierWritable, type MemberTierReading } from './tier-health.ts';
import { boundNamespaces, buildBackendView } from './view.ts';
import { wireBackendWatches } from './watches.ts';

/** How often a backend's store is observed when nothing changes. */
export const defaultObserveIntervalMs = 15_000;

export interface BackendControllerOptions {
  /** Safety-net re-observation; store changes arrive sooner through the store watcher. */
  observeIntervalMs?: number;
  /** How long a node's tier cleanup may take before it is reported and given up. */
  tierCleanupDeadlineMs?: number;
}

export class BackendReconciler {
  readonly controller: Controller;
  private readonly ctx: OperatorContext;
  private readonly informers: BackendInformers;
  private readonly observeIntervalMs: number;
  private readonly applied = new AppliedIntents();
  private readonly holders = new Map<string, string>();
  private readonly failovers = new Map<string, FailoverMemory>();
  private readonly warned = new Set<string>();
  private readonly cleanup: TierCleanup;

  constructor(ctx: OperatorContext, options: BackendControllerOptions = {}) {
    this.ctx = ctx;
    this.observeIntervalMs = options.observeIntervalMs ?? defaultObserveIntervalMs;
    this.informers = backendInformers(ctx);
    this.cleanup = new TierCleanup(ctx, options.tierCleanupDeadlineMs);
    this.controller = new Controller({
      name: 'kvcachebackend',
      concurrency: 2,
      reconcile: (key) => this.reconcile(key),
    });
    wireBackendWatches(this.controller, this.informers, ctx);
  }

  /** Keeps this backend subscribed to exactly one admin address (or none). */
  private async observe(name: string, address: string | undefined) {
    const fresh = this.ctx.store.follow(`backend/${name}`, address, () => this.controller.enqueue(name));
    if (!address) return undefined;
    return fresh
      ? this.ctx.store.refresh(address)
      : (this.ctx.store.latest(address) ?? this.ctx.store.refresh(address));
  }

  async reconcile(name: string): Promise<ReconcileResult | undefined> {
    const backend = this.informers.backends.get(name);
    if (!backend) {
      await this.observe(name, undefined);
      this.holders.delete(name);
      this.failovers.delete(name);
      this.applied.forget(name);
      return undefined;
    }
    if (backend.metadata.deletionTimestamp) return this.reconcileDeletion(backend);
    await ensureFinalizer(this.ctx.client, backend);

    const managed = Boolean(backend.spec.connection.managed);
    let renderProblem: string | undefined;
    let rollout: ChildrenOutcome | undefined;
    const holder = managed ? leaseHolder(this.informers, backend, this.ctx.namespace) : undefined;
    const adminAddress = managed
      ? managedAdminAddress(this.informers, backend, holder)
      : externalAdminAddress(backend);
    if (managed) {
      const defaultImage = this.ctx.settings.get('kv-cache-backend-image').trim();
      if (!backend.spec.image && !defaultImage) {
        renderProblem =
          'no image to run: spec.image is empty and the kv-cache-backend-image Setting is blank; set one of them (running workloads are left as they are)';
      } else {
        // The member roll waits for the master to list each new member: its latest listing, no new read.
        const latest = adminAddress ? this.ctx.store.latest(adminAddress) : undefined;
        rollout = await syncChildren(
          backend,
          this.ctx,
          this.informers,
          {
            namespace: this.ctx.namespace,
            defaultImage,
            pullSecrets: this.ctx.settings.list('kv-cache-image-pull-secrets'),
            boundNamespaces: boundNamespaces(this.informers, name),
          },
          this.applied,
          { latest, adminAddress },
        );
      }
    }
    const store = await this.observe(name, adminAddress);
    const view = buildBackendView(backend, this.ctx, this.informers, {
      adminAddress,
      store,
      renderProblem,
      conflicts: rollout?.conflicts,
      replicasPending: rollout?.replicasPending,
      memberRoll: rollout?.memberRoll,
      handover: rollout?.handover.message,
    });
    if (managed) view.tierWritable = decideTierWritable(await readTiers(backend, view), new Date());
    const decision = decideBackendStatus(view);
    const replication =
      managed && metadataReplicated(backend) ? await this.replication(backend, view) : undefined;
    if (replication) decision.conditions.push(...replication.conditions);
    const failover = advanceFailover(
      backend.status?.lastFailover,
      this.failovers.get(name) ?? {},
      sightingOf(store),
      { tier: view.includeFiles },
    );
    this.failovers.set(name, failover.memory);
    await this.writeStatus(backend, decision, view.usedBy, failover.record, replication?.figures);
    await this.noteTier(backend, decision);
    await this.noteConflict(backend, decision);
    if (managed) await this.noteHandover(backend, holder);
    return { requeueAfterMs: this.observeIntervalMs };
  }

  private endpoints(backend: KVCacheBackend) {
    if (backend.spec.connection.external) {
      return [...backend.spec.connection.external.endpoints].sort((a, b) => ordinal(a.name, b.name));
    }
    const ns = this.ctx.namespace;
    const leader = leaderName(backend);
    const admin = adminServiceName(backend);
    const { deployments, services } = this.informers;
    const own = (o: KubeObject | undefined) => o !== undefined && ownedByBackend(o, backend);
    if (!own(deployments.get(leader, ns)) || !own(services.get(leader, ns)) || !own(services.get(admin, ns)))
      return undefined;
    return [
      { name: 'Admin' as const, address: `${admin}.${ns}.svc:${leaderAdminPort}` },
      { name: 'Client' as const, address: `${leader}.${ns}.svc:${leaderRpcPort}` },
    ];
  }

  /** Where each standby stands in the OpLog and whether etcd has a quorum, read side by side. */
  private async replication(backend: KVCacheBackend, view: BackendView) {
    const servingHost = view.adminAddress?.slice(0, view.adminAddress.lastIndexOf(':'));
    const standbys = view.leaderPods.filter((p) => p.podIP && !p.deleting && p.podIP !== servingHost);
    const etcd = resolveEtcd(backend).managed;
    const etcdPods = etcd
      ? this.informers.pods
          .byIndex(byInstance, backend.metadata.name!)
          .filter((p) => p.metadata.labels?.[componentLabel] === etcdComponent && p.status?.podIP)
      : [];
    const [standbyReadings, etcdReadings] = await Promise.all([
      Promise.all(standbys.map((p) => readStandby(p.name, hostPort(p.podIP!, leaderAdminPort)))),
      Promise.all(
        etcdPods.map((p) => readEtcdMember(p.metadata.name!, hostPort(p.status!.podIP!, etcdMetricsPort))),
      ),
    ]);
    return decideReplication({
      serving: view.store?.health.ok === true && view.store.health.value.serviceReady,
      standbys: standbyReadings,
      ...(etcd ? { etcd: { replicas: etcd.replicas, members: etcdReadings } } : {}),
    });
  }

  private async writeStatus(
    backend: KVCacheBackend,
    d: BackendStatusDecision,
    usedBy: UsedByEntry[],
    lastFailover = backend.status?.lastFailover,
    replication?: ReplicationFigures,
  ): Promise<void> {
    const endpoints = this.endpoints(backend);
    await applyStatus(this.ctx.client, backend, {
      phase: d.phase,
      phaseMessage: d.phaseMessage,
      conditions: mergeConditions(
        backend.status?.conditions,
        d.conditions,
        backend.metadata.generation,
        new Date(),
      ),
      ...(endpoints ? { endpoints } : {}),
      ...(d.capacity ? { capacity: d.capacity } : {}),
      ...(d.members ? { members: d.members } : {}),
      ...(usedBy.length ? { usedBy } : {}),
      ...(lastFailover ? { lastFailover } : {}),
      ...(replication ? { replication } : {}),
    });
  }

  /** One Warning event each time the tier is found holding content it did not start with, for each reason. */
  private async noteTier(backend: KVCacheBackend, d: BackendStatusDecision): Promise<void> {
    const before = backend.status?.conditions?.find((c) => c.type === 'TierWasEmpty');
    const now = d.conditions.find((c) => c.type === 'TierWasEmpty');
    if (now?.status !== 'False' || before?.reason === now.reason) return;
    await this.ctx.events.record(backend, 'Warning', 'KVCacheTierNotEmpty', now.message);
  }

  /** One Warning event when a child's name is first found held by an object kvpool does not control. */
  private async noteConflict(backend: KVCacheBackend, d: BackendStatusDecision): Promise<void> {
    const was = backend.status?.conditions?.find((c) => c.type === 'RolloutComplete')?.reason;
    const now = d.conditions.find((c) => c.type === 'RolloutComplete');
    if (now?.reason !== RolloutCompleteReason.ChildConflict || was === now.reason) return;
    await this.ctx.events.record(backend, 'Warning', now.reason, now.message);
  }

  /** A Normal event when the Lease holder changes between passes (the first sighting is not one). */
  private async noteHandover(backend: KVCacheBackend, holder: string | undefined): Promise<void> {
    const name = backend.metadata.name!;
    const previous = this.holders.get(name);
    if (!holder) return;
    this.holders.set(name, holder);
    if (previous === undefined || previous === holder) return;
    const lease = this.informers.leases.get(leaderName(backend), this.ctx.namespace);
    await this.ctx.events.record(
      backend,
      'Normal',
      'KVCacheLeaderHandover',
      `the leader moved from ${previous} to ${holder} (Lease transitions: ${lease?.spec?.leaseTransitions ?? '?'}); keys held in memory before are gone (cold cache)`,
    );
  }

  private async reconcileDeletion(backend: KVCacheBackend): Promise<ReconcileResult | undefined> {
    const view = buildBackendView(backend, this.ctx, this.informers, {});
    if (view.usedBy.length === 0 && !(await backendInUseLive(this.ctx.client, backend))) {
      const outcome = await teardownBackend(backend, this.ctx, this.informers, this.warned, this.cleanup);
      if (outcome.done) {
        await this.observe(backend.metadata.name!, undefined);
        return undefined;
      }
      await this.writeStatus(
        backend,
        { ...decideBackendStatus(view), phaseMessage: outcome.message },
        view.usedBy,
      );
      return { requeueAfterMs: teardownPollMs };
    }
    // Held: the workloads keep running and are still observed; pool events wake this pass on release.
    const adminAddress = backend.spec.connection.managed
      ? managedAdminAddress(this.informers, backend)
      : externalAdminAddress(backend);
    const store = await this.observe(backend.metadata.name!, adminAddress);
    const held = buildBackendView(backend, this.ctx, this.informers, { adminAddress, store });
    await this.writeStatus(backend, decideBackendStatus(held), held.usedBy);
    return { requeueAfterMs: this.observeIntervalMs };
  }
}

/** Each ready member of a tier group, asked for its tier's status (decision 39), all at once. */
async function readTiers(backend: KVCacheBackend, view: BackendView): Promise<MemberTierReading[]> {
  const groups = managedConnection(backend).members;
  const members = view.memberPods.filter(
    (p) => p.ready && !p.deleting && p.podIP && groups[p.group] && groupDisk(groups[p.group]!),
  );
  return Promise.all(
    members.map(async (p) => ({
      pod: p.name,
      node: p.nodeName ?? '?',
      group: p.group,
      reading: await readMemberTier(hostPort(p.podIP!, memberTierStatusPort(p.group))),
    })),
  );
}
