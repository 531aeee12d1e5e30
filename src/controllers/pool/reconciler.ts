// The pool controller: one pass per master converges its tenant ledger with every pool and Binding on
// that backend, seeds the leader's policy ConfigMap, reads the grants back from one scrape, and writes
// every Binding's and pool's status. Bindings have no controller of their own.
import type { UsedByEntry } from '../../api/schema.ts';
import type { KVCacheBackend, KVCachePool, KVCachePoolBinding } from '../../api/types.ts';
import { applyChild, applyStatus, eachWrite, ensureFinalizer, removeFinalizer } from '../../context/apply.ts';
import {
  byBackend,
  byBindingRef,
  byPool,
  type PoolInformers,
  poolInformers,
} from '../../context/informers.ts';
import { externalAdminAddress, leaseHolder, managedAdminAddress } from '../../context/master-address.ts';
import type { OperatorContext } from '../../context/operator-context.ts';
import { Controller, type ReconcileResult } from '../../kube/controller.ts';
import { mergeConditions } from '../../model/conditions.ts';
import { domainOf } from '../../model/domains.ts';
import { policyKey, seedConfigMapName } from '../../model/store-objects.ts';
import { gaugeBytes } from '../../store/prometheus.ts';
import { allocatableBytes, tenantFigures } from '../../store/tenant-metrics.ts';
import { decideBinding } from './binding-status.ts';
import { executeLedger, type LedgerOutcome } from './ledger.ts';
import { measureLedgerPass } from './ledger-metrics.ts';
import { heldLive, liveInput, mayRelease, poolInUseLive } from './live-check.ts';
import { planLedger } from './plan.ts';
import { parsePolicy, renderSeedConfigMap, seedTenants } from './seed-policy.ts';
import { type Decision, decidePool, type MasterReport } from './status.ts';
import { readRegistry, writeRegistry } from './tenant-registry.ts';
import { unpooledKey, wirePoolWatches } from './watches.ts';

/** How soon a pass whose ledger requests failed runs again. */
const ledgerRetryMs = 5_000;

export class PoolReconciler {
  readonly controller: Controller;
  private readonly ctx: OperatorContext;
  private readonly informers: PoolInformers;
  private readonly observeIntervalMs: number;
  private readonly appliedOnce = new Set<string>();

  constructor(ctx: OperatorContext, options: { observeIntervalMs?: number } = {}) {
    this.ctx = ctx;
    this.observeIntervalMs = options.observeIntervalMs ?? 30_000;
    this.informers = poolInformers(ctx);
    this.controller = new Controller({
      name: 'kvcachepool',
      concurrency: 2,
      reconcile: (key) => this.reconcile(key),
    });
    wirePoolWatches(this.controller, this.informers);
  }

  /** Workloads naming a Binding (ModelDeployments in its namespace), which hold its deletion. */
  usedBy(b: KVCachePoolBinding): UsedByEntry[] {
    return this.informers.modelDeployments
      .byIndex(byBindingRef, `${b.metadata.namespace}/${b.metadata.name}`)
      .map((m) => ({ kind: 'ModelDeployment', namespace: '', name: m.metadata.name! }))
      .sort((a, b) => (a.name < b.name ? -1 : 1));
  }

  async reconcile(key: string): Promise<ReconcileResult | undefined> {
    if (key === unpooledKey) return this.reconcileUnpooled();
    const backend = this.informers.backends.get(key);
    const pools = this.informers.pools.byIndex(byBackend, key);
    let bindings = pools.flatMap((p) => this.informers.bindings.byIndex(byPool, p.metadata.name!));
    if (pools.length === 0 && !backend) {
      this.ctx.store.unfollow(`pool/${key}`);
      return undefined;
    }
    const report: MasterReport = { ledgerOff: false, retained: new Set() };
    const address = this.resolve(key, backend, report);
    this.ctx.store.follow(`pool/${key}`, address, () => this.controller.enqueue(key));
    const registered =
      (backend && (await readRegistry(this.ctx.client, this.ctx.namespace, key))) ?? new Set();
    let input = {
      pools,
      bindings,
      isHeld: (b: KVCachePoolBinding) => this.usedBy(b).length > 0,
      registered,
    };
    let plan = planLedger({ ...input, ledger: undefined });
    if (mayRelease(input, plan)) {
      input = await liveInput(this.ctx.client, input);
      bindings = input.bindings;
      plan = planLedger({ ...input, ledger: undefined });
    }
    // Locked before anything is written to the master, so no ledger entry outlives its Binding.
    await eachWrite(
      [...pools, ...bindings].filter((o) => !o.metadata.deletionTimestamp),
      (o) => ensureFinalizer(this.ctx.client, o),
    );
    let outcome: LedgerOutcome | undefined;
    if (address && !report.ledgerOff) {
      outcome = await measureLedgerPass(key, () =>
        executeLedger(address, input, plan, (tenants) =>
          writeRegistry(this.ctx.client, backend!, this.ctx.namespace, tenants),
        ),
      );
      plan = outcome.plan;
      report.ledgerOff = outcome.ledgerOff;
      report.ledgerFailure = outcome.failure;
      report.retained = outcome.retained;
      report.putFailures = outcome.putFailures;
    }
    if (backend?.spec.connection.managed)
      await this.seed(backend, plan, outcome, outcome?.registered ?? input.registered);
    await this.readBack(key, address, report, outcome?.wrote ?? false);

    const releasedAll = !backend || report.ledgerOff;
    await eachWrite(plan.releasing, async (b) => {
      const failure = outcome?.deleteFailures.get(domainOf(b));
      // Released once the master was listed and this Binding's own entry is gone (or never was ours).
      if (releasedAll || (outcome?.listed && !failure)) await removeFinalizer(this.ctx.client, b);
      else {
        const why = failure ??
          outcome?.failure ?? {
            kind: 'LedgerUnreachable' as const,
            message:
              report.unresolved?.message ?? report.ledgerFailure?.message ?? 'the master was not reached',
          };
        await this.writeStatus(b, decideBinding(b, plan, report, [], why));
      }
    });
    const releasing = new Set(plan.releasing);
    await eachWrite(
      bindings.filter((x) => !releasing.has(x)),
      (b) => this.writeStatus(b, decideBinding(b, plan, report, this.usedBy(b))),
    );
    for (const p of pools) {
      const own = bindings.filter((b) => b.spec.poolRef.name === p.metadata.name);
      const d = decidePool(p, own, plan, report);
      await this.writeStatus(p, d);
      if (
        p.metadata.deletionTimestamp &&
        d.conditions.find((x) => x.type === 'Releasable')?.status === 'True' &&
        !(await poolInUseLive(this.ctx.client, p))
      ) {
        await removeFinalizer(this.ctx.client, p);
      }
    }
    // A failed ledger request is retried soon, not at the next observation: its Binding says "retrying".
    // A domain the master keeps because it holds data is not a failure to retry.
    const failed =
      outcome &&
      (outcome.failure ||
        outcome.putFailures.size ||
        [...outcome.deleteFailures.values()].some((f) => f.kind !== 'TenantNotEmpty'));
    return {
      requeueAfterMs: failed ? Math.min(ledgerRetryMs, this.observeIntervalMs) : this.observeIntervalMs,
    };
  }

  /** Fills how the pool's backend resolves; returns the master's admin address when there is one. */
  private resolve(
    key: string,
    backend: KVCacheBackend | undefined,
    report: MasterReport,
  ): string | undefined {
    if (!backend) {
      report.unresolved = {
        reason: 'BackendNotFound',
        message: `KVCacheBackend ${key} does not exist; create it, or delete this pool`,
      };
      return undefined;
    }
    report.clientEndpoint = backend.status?.endpoints?.find((e) => e.name === 'Client')?.address;
    const published = backend.status?.endpoints?.some((e) => e.name === 'Admin');
    if (!published) {
      report.unresolved = {
        reason: 'EndpointsNotPublished',
        message: `backend ${key} has published no Admin endpoint yet`,
      };
      return undefined;
    }
    if (backend.spec.connection.managed?.leader.multiTenancy === false) report.ledgerOff = true;
    const managed = Boolean(backend.spec.connection.managed);
    const address = managed
      ? managedAdminAddress(this.informers, backend, leaseHolder(this.informers, backend, this.ctx.namespace))
      : externalAdminAddress(backend);
    if (!address && !report.ledgerOff)
      report.ledgerFailure = {
        kind: 'LedgerUnreachable',
        message: `no leader of backend ${key} is ready to answer`,
      };
    return address;
  }

  private async seed(
    backend: KVCacheBackend,
    plan: ReturnType<typeof planLedger>,
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

  /** One scrape per master per pass: fresh after a ledger write, else the watcher's latest. */
  private async readBack(key: string, address: string | undefined, report: MasterReport, wrote: boolean) {
    if (!address) return;
    const me = `pool/${key}`;
    const o = wrote
      ? await this.ctx.store.refresh(address, me)
      : (this.ctx.store.latest(address) ?? (await this.ctx.store.refresh(address, me)));
    if (!o.metrics?.ok) return;
    report.figures = tenantFigures(o.metrics.value);
    report.allocatableBytes = report.ledgerOff
      ? gaugeBytes(o.metrics.value, 'master_total_capacity_bytes')
      : allocatableBytes(o.metrics.value);
  }

  private async writeStatus(obj: KVCachePool | KVCachePoolBinding, d: Decision<Record<string, unknown>>) {
    await applyStatus(this.ctx.client, obj, {
      phase: d.phase,
      phaseMessage: d.phaseMessage,
      conditions: mergeConditions(obj.status?.conditions, d.conditions, obj.metadata.generation, new Date()),
      ...d.status,
    });
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
        conditions: [{ type: 'QuotaObserved', status: 'False', reason: 'PoolNotFound', message }],
        status: this.usedBy(b).length ? { usedBy: this.usedBy(b) } : {},
      });
    }
    return undefined;
  }
}
