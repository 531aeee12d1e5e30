// The pool controller: one pass per master converges its tenant ledger with every pool and Binding on
// that backend, seeds the leader's policy ConfigMap, reads the grants back from one scrape, and writes
// every Binding's and pool's status. Bindings have no controller of their own.
import {
  BindingCondition,
  BindingReason,
  bindingConditions,
} from '../../api/kvcache-pool-binding-conditions.ts';
import { PoolCondition, PoolReason } from '../../api/kvcache-pool-conditions.ts';
import type { UsedByEntry } from '../../api/schema.ts';
import type { KVCacheBackend, KVCachePool, KVCachePoolBinding, StatusOf } from '../../api/types.ts';
import { Controller, type ReconcileResult } from '../../kube/controller.ts';
import { log } from '../../kube/log.ts';
import { applyChild, eachWrite, ensureFinalizer, removeFinalizer } from '../../operator-io/apply.ts';
import {
  byBackend,
  byBindingRef,
  byPool,
  type PoolInformers,
  poolInformers,
} from '../../operator-io/informers.ts';
import type { OperatorContext } from '../../operator-io/operator-context.ts';
import { TenantLedger } from '../../store/tenant-ledger.ts';
import { childConflictMessage } from '../../vocabulary/child-ownership.ts';
import { deciderOf } from '../../vocabulary/conditions.ts';
import { domainOf } from '../../vocabulary/domains.ts';
import { finalizer } from '../../vocabulary/identity.ts';
import { sumPoolPrefix } from '../../vocabulary/pool-prefix.ts';
import { policyKey, seedConfigMapName } from '../../vocabulary/store-objects.ts';
import { noteNotReleased, notePurge } from './binding-events.ts';
import { type BindingWorkloads, decideBinding, workloadStatus } from './binding-status.ts';
import { ensureClaims, releaseClaimAndFinalizer, releaseClaimsOfDeleted } from './domain-claims.ts';
import { executeLedger, type LedgerOutcome, retrySoon } from './ledger.ts';
import { measureLedgerPass, stageClock } from './ledger-metrics.ts';
import { heldLive, liveInput, mayRelease, poolInUseLive } from './live-check.ts';
import { ledgerObjects, purgeHazard, readBack } from './master-reads.ts';
import { resolveMaster } from './master-resolution.ts';
import { type LedgerPlan, type PlanInput, planLedger } from './plan.ts';
import { parsePolicy, renderSeedConfigMap, seedTenants } from './seed-policy.ts';
import { type Decision, decidePool, type MasterReport, type StatusFields } from './status.ts';
import { StatusWriters, writeDecision } from './status-writer.ts';
import { parseRegistry, RegistryVersions, registryKey } from './tenant-registry.ts';
import { unpooledKey, wirePoolWatches } from './watches.ts';

/** How soon a pass whose ledger requests failed runs again. */
const ledgerRetryMs = 5_000;

/** How often a pool's ledger key is passed over without an event. */
export const defaultPoolObserveIntervalMs = 30_000;

/** What one pass over a master has read and decided so far. */
interface Pass {
  key: string;
  backend: KVCacheBackend | undefined;
  pools: KVCachePool[];
  /** The pools' Bindings, read live when the pass may release one. */
  bindings: KVCachePoolBinding[];
  input: Omit<PlanInput, 'ledger'>;
  plan: LedgerPlan;
  report: MasterReport;
  /** The master's address; undefined when it does not resolve or its ledger objects are not ours. */
  address: string | undefined;
  /** An object the backend does not own holds the name of its registry or policy ConfigMap. */
  conflicted: boolean;
  outcome?: LedgerOutcome;
}

export class PoolReconciler {
  readonly controller: Controller;
  private readonly ctx: OperatorContext;
  private readonly informers: PoolInformers;
  private readonly observeIntervalMs: number;
  private readonly appliedOnce = new Set<string>();
  private readonly statusWriters: StatusWriters;
  private readonly registries = new RegistryVersions();

  constructor(ctx: OperatorContext, options: { observeIntervalMs?: number } = {}) {
    this.ctx = ctx;
    this.observeIntervalMs = options.observeIntervalMs ?? defaultPoolObserveIntervalMs;
    this.informers = poolInformers(ctx);
    this.controller = new Controller({
      name: 'kvcachepool',
      concurrency: 2,
      reconcile: (key) => this.reconcile(key),
    });
    wirePoolWatches(this.controller, this.informers);
    this.statusWriters = new StatusWriters((key, err) => {
      log.error(
        { controller: this.controller.name, key, err: err instanceof Error ? err.message : String(err) },
        'status writes failed; retrying with backoff',
      );
      this.controller.queue.addRateLimited(key);
    });
    releaseClaimsOfDeleted(ctx, this.informers);
  }

  /** Workloads naming a Binding (ModelDeployments in its namespace), which hold its deletion. */
  usedBy(b: KVCachePoolBinding): UsedByEntry[] {
    return this.informers.modelDeployments
      .byIndex(byBindingRef, `${b.metadata.namespace}/${b.metadata.name}`)
      .map((m) => ({ kind: 'ModelDeployment', namespace: '', name: m.metadata.name! }))
      .sort((a, b) => (a.name < b.name ? -1 : 1));
  }

  /** Who holds a Binding, and the prompt tokens their engines loaded from the pool (from their statuses). */
  workloads(b: KVCachePoolBinding): BindingWorkloads {
    const deployments = this.informers.modelDeployments.byIndex(
      byBindingRef,
      `${b.metadata.namespace}/${b.metadata.name}`,
    );
    return {
      usedBy: this.usedBy(b),
      poolPrefix: deployments.length
        ? sumPoolPrefix(deployments.map((m) => m.status?.poolPrefix))
        : { hitTokens: 0, queriedTokens: 0 },
    };
  }

  async reconcile(key: string): Promise<ReconcileResult | undefined> {
    if (key === unpooledKey) return this.reconcileUnpooled();
    // A finalizer patch checks the cached resourceVersion, which a status write still in flight moves.
    if (this.unlocked(key)) await this.statusWriters.of(key).idle();
    const backend = this.informers.backends.get(key);
    const pools = this.informers.pools.byIndex(byBackend, key);
    const bindings = pools.flatMap((p) => this.informers.bindings.byIndex(byPool, p.metadata.name!));
    if (pools.length === 0 && !backend) {
      this.ctx.store.unfollow(`pool/${key}`);
      this.registries.forget(key);
      return undefined;
    }
    const lap = stageClock(key);
    const pass = await this.readPass(key, backend, pools, bindings);
    lap('read');
    // Locked before anything is written to the master, so no ledger entry outlives its Binding.
    await eachWrite(
      [...pools, ...pass.bindings].filter((o) => !o.metadata.deletionTimestamp),
      (o) => ensureFinalizer(this.ctx.client, o),
    );
    if (backend) await ensureClaims(this.ctx, this.informers, key, pass.bindings);
    lap('finalizers');
    if (pass.address && !pass.report.ledgerOff) await this.writeLedger(pass);
    lap('ledger');
    if (backend?.spec.connection.managed && !pass.conflicted)
      await this.seed(backend, pass.plan, pass.outcome, pass.outcome?.registered ?? pass.input.registered);
    lap('seed');
    // The master's figures feed only the statuses: read back within the pass only when a release or a
    // pool's deletion decides from them, else in the status job, so the next pass does not wait for it.
    const deleting = pools.some((p) => p.metadata.deletionTimestamp);
    const readBackNow = pass.plan.releasing.length > 0 || deleting;
    const figures = () => readBack(this.ctx, key, pass.address, pass.report, pass.outcome?.wrote ?? false);
    if (readBackNow) {
      await figures();
      lap('readBack');
    }
    await eachWrite(pass.plan.releasing, (b) => this.release(pass, b));
    lap('release');
    const writeStatuses = () => this.writeStatuses(pass, readBackNow ? undefined : figures);
    // Statuses are written apart from the pass, so the next pass's ledger writes do not wait behind
    // them; a pool being deleted is released within its pass.
    if (deleting) await writeStatuses();
    else this.statusWriters.of(key).submit(writeStatuses);
    return {
      requeueAfterMs:
        pass.outcome && retrySoon(pass.outcome)
          ? Math.min(ledgerRetryMs, this.observeIntervalMs)
          : this.observeIntervalMs,
    };
  }

  /** Who the master is, what this operator registered on it, and the plan made before listing it. */
  private async readPass(
    key: string,
    backend: KVCacheBackend | undefined,
    pools: KVCachePool[],
    bindings: KVCachePoolBinding[],
  ): Promise<Pass> {
    const report: MasterReport = { ledgerOff: false, retained: new Set() };
    let address = resolveMaster(this.informers, this.ctx.namespace, key, backend, report);
    const registry = backend
      ? await ledgerObjects(this.ctx, this.informers, this.registries, backend)
      : undefined;
    if (registry?.conflicts.length) {
      // Neither the ledger nor the policy is touched while someone else's object holds their names.
      report.unresolved = {
        reason: PoolReason.ChildConflict,
        message: childConflictMessage(registry.conflicts, 'KVCacheBackend', `KVCacheBackend ${key}`),
      };
      address = undefined;
    }
    this.ctx.store.follow(`pool/${key}`, address, () => this.controller.enqueue(key));
    const registered = parseRegistry(registry?.live?.data?.[registryKey]);
    let input = {
      pools,
      bindings,
      isHeld: (b: KVCachePoolBinding) => this.usedBy(b).length > 0,
      registered,
    };
    let plan = planLedger({ ...input, ledger: undefined });
    if (mayRelease(input, plan)) {
      input = await liveInput(this.ctx.client, input);
      plan = planLedger({ ...input, ledger: undefined });
    }
    const conflicted = Boolean(registry?.conflicts.length);
    return { key, backend, pools, bindings: input.bindings, input, plan, report, address, conflicted };
  }

  /** Converges the master's ledger with the plan; the plan made from its listing replaces the pass's. */
  private async writeLedger(pass: Pass) {
    const { key, report } = pass;
    const backend = pass.backend!;
    const address = pass.address!;
    const outcome = await measureLedgerPass(key, () =>
      executeLedger(
        new TenantLedger(address, this.ctx.storeRequests),
        pass.input,
        pass.plan,
        (tenants) => this.registries.write(this.ctx.client, backend, this.ctx.namespace, tenants),
        () => purgeHazard(this.ctx, key, backend, address),
      ),
    );
    pass.outcome = outcome;
    pass.plan = outcome.plan;
    report.ledgerOff = outcome.ledgerOff;
    report.ledgerFailure = outcome.failure;
    report.retained = outcome.retained;
    report.putFailures = outcome.putFailures;
  }

  /** A deleted Binding lets go once the master dropped its entry; until then its status says why not. */
  private async release(pass: Pass, b: KVCachePoolBinding) {
    const { key, outcome, report } = pass;
    const releasedAll = !pass.backend || report.ledgerOff;
    const domain = domainOf(b);
    const failure = outcome?.deleteFailures.get(domain);
    const purged = outcome?.purged.get(domain);
    if (purged) await notePurge(this.ctx.events, b, key, purged);
    // Released once the master was listed and this Binding's own entry is gone (or never was ours).
    if (releasedAll || (outcome?.listed && !failure)) {
      await releaseClaimAndFinalizer(this.ctx, key, b);
      return;
    }
    const why = failure ??
      outcome?.failure ?? {
        kind: PoolReason.LedgerUnreachable,
        message: report.unresolved?.message ?? report.ledgerFailure?.message ?? 'the master was not reached',
      };
    const drain = { backend: key, purged, refusedBy: outcome?.purgeRefused.get(domain) };
    const d = decideBinding(b, pass.plan, report, { usedBy: [] }, why, drain);
    await noteNotReleased(this.ctx.events, b, d);
    await this.writeStatus(b, d);
  }

  /** Every Binding's and pool's status, and a deleted pool's finalizer once nothing holds it. */
  private async writeStatuses(pass: Pass, figures?: () => Promise<void>) {
    const { key, plan, report, bindings } = pass;
    const lapStatus = stageClock(key);
    if (figures) {
      await figures();
      lapStatus('readBack');
    }
    const releasing = new Set(plan.releasing);
    await eachWrite(
      bindings.filter((x) => !releasing.has(x)),
      (b) => this.writeStatus(b, decideBinding(b, plan, report, this.workloads(b))),
    );
    lapStatus('bindingStatus');
    for (const p of pass.pools) {
      const own = bindings.filter((b) => b.spec.poolRef.name === p.metadata.name);
      const d = decidePool(p, own, plan, report);
      await this.writeStatus(p, d);
      if (
        p.metadata.deletionTimestamp &&
        d.conditions.find((x) => x.type === PoolCondition.Releasable)?.status === 'True' &&
        !(await poolInUseLive(this.ctx.client, p))
      ) {
        await removeFinalizer(this.ctx.client, p);
      }
    }
    lapStatus('poolStatus');
  }

  /** Whether a pool or Binding of this backend still lacks the finalizer. */
  private unlocked(key: string): boolean {
    const pools = this.informers.pools.byIndex(byBackend, key);
    const objects = [
      ...pools,
      ...pools.flatMap((p) => this.informers.bindings.byIndex(byPool, p.metadata.name!)),
    ];
    return objects.some((o) => !o.metadata.deletionTimestamp && !o.metadata.finalizers?.includes(finalizer));
  }

  private async seed(
    backend: KVCacheBackend,
    plan: LedgerPlan,
    outcome: LedgerOutcome | undefined,
    registered: Set<string>,
  ) {
    const live = this.informers.policies.get(seedConfigMapName(backend.metadata.name!), this.ctx.namespace);
    const tenants = seedTenants({
      desired: new Map([...plan.desired].map(([d, claim]) => [d, claim.bytes])),
      registered,
      listed: outcome?.listed,
      deleted: outcome?.deleted,
      previous: parsePolicy(live?.data?.[policyKey]),
    });
    const cm = renderSeedConfigMap(backend, this.ctx.namespace, tenants);
    await applyChild(this.ctx.client, cm, live, this.appliedOnce);
  }

  private async writeStatus<O extends KVCachePool | KVCachePoolBinding>(
    obj: O,
    d: Decision<StatusFields<StatusOf<O>>>,
  ) {
    await writeDecision(this.ctx.client, obj, d);
  }

  /** Bindings naming a pool that does not exist: nothing is owed to any master. */
  private async reconcileUnpooled(): Promise<ReconcileResult | undefined> {
    for (const b of this.informers.bindings.list()) {
      if (this.informers.pools.get(b.spec.poolRef.name)) continue;
      if (b.metadata.deletionTimestamp) {
        if (this.usedBy(b).length === 0 && !(await heldLive(this.ctx.client, b)))
          await removeFinalizer(this.ctx.client, b);
        continue;
      }
      const message = `KVCachePool ${b.spec.poolRef.name} does not exist; ask an administrator to create it, or fix spec.poolRef`;
      await this.writeStatus(b, {
        phase: 'Error',
        phaseMessage: message,
        conditions: [
          deciderOf(bindingConditions)(
            BindingCondition.QuotaObserved,
            'False',
            BindingReason.PoolNotFound,
            message,
          ),
        ],
        status: workloadStatus(this.workloads(b)),
      });
    }
    return undefined;
  }
}
