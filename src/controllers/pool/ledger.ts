// Executes a ledger plan against one master: list once, PUT what differs, DELETE what this operator
// registered and no Binding wants. A delete the master refuses (tenant not empty) is retained, unless
// its Bindings asked for a purge and the store has no disk tier: the tenant's objects are then removed
// and the delete tried again. A tenant enters the registry before it is first written, and leaves it
// once it is gone from the master.

import { PoolReason } from '../../api/kvcache-pool-conditions.ts';
import { eachWrite } from '../../operator-io/apply.ts';
import {
  type LedgerEntry,
  LedgerError,
  type LedgerFailure,
  type TenantLedger,
} from '../../store/tenant-ledger.ts';
import { type LedgerPlan, type PlanInput, planLedger } from './plan.ts';
import { sameTenants } from './tenant-registry.ts';

/** Ledger requests in flight at once: a pass may carry one per Binding on the master. */
const ledgerConcurrency = 8;

export interface LedgerOutcome {
  plan: LedgerPlan;
  ledgerOff: boolean;
  /** A failure of the whole master: the listing, or a policy it cannot persist. */
  failure?: LedgerFailure;
  /** Tenants whose PUT failed this pass; every other tenant was still written. */
  putFailures: Map<string, LedgerFailure>;
  /** Domains whose delete the master refused because they hold data. */
  retained: Set<string>;
  deleteFailures: Map<string, LedgerFailure>;
  /** The master's ledger as listed this pass; undefined when it could not be read. */
  listed?: LedgerEntry[];
  /** Tenants this pass deleted from the master. */
  deleted: Set<string>;
  /** Tenants whose objects this pass removed, with the count the master gave. */
  purged: Map<string, number>;
  /** Tenants whose purge was not attempted, with what shows the store has a disk tier. */
  purgeRefused: Map<string, string>;
  /** The tenant registry as the pass leaves it. */
  registered: Set<string>;
  wrote: boolean;
}

/** Stores the tenant registry (the names this operator registered on the master). */
export type SaveRegistry = (tenants: Set<string>) => Promise<void>;

/** Why purging a tenant could remove other tenants' data (a disk tier), or undefined when it cannot. */
export type PurgeHazard = () => Promise<string | undefined>;

/** `unlisted` is the plan made without the master's listing; it stands when the listing fails. */
export async function executeLedger(
  ledger: TenantLedger,
  input: Omit<PlanInput, 'ledger'>,
  unlisted: LedgerPlan,
  saveRegistry: SaveRegistry,
  purgeHazard: PurgeHazard,
): Promise<LedgerOutcome> {
  const outcome: LedgerOutcome = {
    plan: unlisted,
    ledgerOff: false,
    retained: new Set(),
    putFailures: new Map(),
    deleteFailures: new Map(),
    deleted: new Set(),
    purged: new Map(),
    purgeRefused: new Map(),
    registered: input.registered,
    wrote: false,
  };
  let entries: LedgerEntry[];
  try {
    entries = await ledger.list();
  } catch (err) {
    const failure = (err as LedgerError).failure;
    if (failure.kind === PoolReason.MultiTenancyDisabled) outcome.ledgerOff = true;
    else outcome.failure = failure;
    return outcome;
  }
  const plan = planLedger({ ...input, ledger: entries });
  outcome.plan = plan;
  outcome.listed = entries;
  const pass = new LedgerPass(ledger, outcome, input.registered, saveRegistry, purgeHazard);
  await pass.save();
  await eachWrite(plan.puts, (p) => pass.put(p), ledgerConcurrency);
  if (outcome.ledgerOff) return outcome;
  await eachWrite(plan.deletes, (tenant) => pass.remove(tenant), ledgerConcurrency);
  pass.forgetGone(new Set(entries.map((e) => e.tenant)));
  await pass.save();
  return outcome;
}

/** One pass's writes to a master, recorded in its outcome, and the tenant registry as they leave it. */
class LedgerPass {
  private readonly ledger: TenantLedger;
  private readonly outcome: LedgerOutcome;
  private readonly plan: LedgerPlan;
  private readonly saveRegistry: SaveRegistry;
  private readonly purgeHazard: PurgeHazard;
  /** What the registry held, every tenant this pass writes, less those it deletes. */
  private readonly registry: Set<string>;
  private saved: Set<string>;
  /** Asked at most once a pass, and only when a purge is due. */
  private hazard: Promise<string | undefined> | undefined;

  constructor(
    ledger: TenantLedger,
    outcome: LedgerOutcome,
    registered: Set<string>,
    saveRegistry: SaveRegistry,
    purgeHazard: PurgeHazard,
  ) {
    this.ledger = ledger;
    this.outcome = outcome;
    this.plan = outcome.plan;
    this.saveRegistry = saveRegistry;
    this.purgeHazard = purgeHazard;
    this.registry = new Set([...registered, ...outcome.plan.puts.map((p) => p.tenant)]);
    this.saved = registered;
  }

  async save(): Promise<void> {
    if (sameTenants(this.registry, this.saved)) return;
    await this.saveRegistry(this.registry);
    this.saved = new Set(this.registry);
    this.outcome.registered = this.saved;
  }

  /** One tenant's failed write stops nothing: it is reported on its own Binding, the rest go on. */
  async put({ tenant, bytes }: { tenant: string; bytes: bigint }): Promise<void> {
    const outcome = this.outcome;
    if (outcome.ledgerOff) return;
    try {
      await this.ledger.put(tenant, bytes);
      outcome.wrote = true;
    } catch (err) {
      const failure = (err as LedgerError).failure;
      if (failure.kind === PoolReason.MultiTenancyDisabled) outcome.ledgerOff = true;
      else outcome.putFailures.set(tenant, failure);
      if (failure.kind === PoolReason.QuotaPolicyNotWritable) outcome.failure = failure;
    }
  }

  /** Deletes the tenant; one that still holds data is purged first when its Bindings asked for it. */
  async remove(tenant: string): Promise<void> {
    const outcome = this.outcome;
    let failure = await this.deleteTenant(tenant);
    if (failure?.kind === 'TenantNotEmpty' && this.plan.purges.has(tenant)) {
      const purgeFailure = await this.purge(tenant);
      if (purgeFailure) failure = purgeFailure;
      else if (outcome.purged.has(tenant)) failure = await this.deleteTenant(tenant);
    }
    if (!failure) return;
    outcome.deleteFailures.set(tenant, failure);
    if (failure.kind === 'TenantNotEmpty') outcome.retained.add(tenant);
    else if (failure.kind === PoolReason.QuotaPolicyNotWritable) outcome.failure = failure;
  }

  /** A registered tenant the master no longer holds, and no Binding wants, is forgotten. */
  forgetGone(listed: Set<string>): void {
    const plan = this.plan;
    for (const tenant of [...this.registry])
      if (
        !listed.has(tenant) &&
        !plan.desired.has(tenant) &&
        !plan.contested.has(tenant) &&
        !plan.overTotal.has(tenant)
      )
        this.registry.delete(tenant);
  }

  private async deleteTenant(tenant: string): Promise<LedgerFailure | undefined> {
    try {
      await this.ledger.delete(tenant);
      this.outcome.wrote = true;
      this.outcome.deleted.add(tenant);
      this.registry.delete(tenant);
      return undefined;
    } catch (err) {
      return failureOf(err);
    }
  }

  private async purge(tenant: string): Promise<LedgerFailure | undefined> {
    try {
      this.hazard ??= this.purgeHazard();
      const unsafe = await this.hazard;
      if (unsafe) this.outcome.purgeRefused.set(tenant, unsafe);
      else {
        this.outcome.purged.set(tenant, await this.ledger.purge(tenant));
        this.outcome.wrote = true;
      }
      return undefined;
    } catch (err) {
      return failureOf(err);
    }
  }
}

/**
 * Whether a pass's ledger requests failed so that a retry soon may succeed: its Binding says "retrying".
 * A domain the master keeps because it holds data is not such a failure, unless it is being purged.
 */
export function retrySoon(outcome: LedgerOutcome): boolean {
  return Boolean(
    outcome.failure ||
      outcome.putFailures.size ||
      [...outcome.deleteFailures.values()].some((f) => f.kind !== 'TenantNotEmpty') ||
      [...outcome.retained].some((t) => outcome.plan.purges.has(t) && !outcome.purgeRefused.has(t)),
  );
}

function failureOf(err: unknown): LedgerFailure {
  if (err instanceof LedgerError) return err.failure;
  return { kind: PoolReason.LedgerUnreachable, message: err instanceof Error ? err.message : String(err) };
}
