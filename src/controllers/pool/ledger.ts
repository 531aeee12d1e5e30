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
  const byTenant = new Map(entries.map((e) => [e.tenant, e]));
  const registry = new Set([...input.registered, ...plan.puts.map((p) => p.tenant)]);
  let saved = input.registered;
  const save = async () => {
    if (sameTenants(registry, saved)) return;
    await saveRegistry(registry);
    saved = new Set(registry);
    outcome.registered = saved;
  };
  await save();
  // One tenant's failed write stops nothing: it is reported on its own Binding, the rest go on.
  const put = async ({ tenant, bytes }: { tenant: string; bytes: bigint }) => {
    if (outcome.ledgerOff) return;
    try {
      await ledger.put(tenant, bytes);
      outcome.wrote = true;
    } catch (err) {
      const failure = (err as LedgerError).failure;
      if (failure.kind === PoolReason.MultiTenancyDisabled) outcome.ledgerOff = true;
      else outcome.putFailures.set(tenant, failure);
      if (failure.kind === PoolReason.QuotaPolicyNotWritable) outcome.failure = failure;
    }
  };
  await eachWrite(plan.puts, put, ledgerConcurrency);
  if (outcome.ledgerOff) return outcome;
  const deleteTenant = async (tenant: string): Promise<LedgerFailure | undefined> => {
    try {
      await ledger.delete(tenant);
      outcome.wrote = true;
      outcome.deleted.add(tenant);
      registry.delete(tenant);
      return undefined;
    } catch (err) {
      return failureOf(err);
    }
  };
  // Asked at most once a pass, and only when a purge is due.
  let hazard: Promise<string | undefined> | undefined;
  const purge = async (tenant: string): Promise<LedgerFailure | undefined> => {
    try {
      hazard ??= purgeHazard();
      const unsafe = await hazard;
      if (unsafe) outcome.purgeRefused.set(tenant, unsafe);
      else {
        outcome.purged.set(tenant, await ledger.purge(tenant));
        outcome.wrote = true;
      }
      return undefined;
    } catch (err) {
      return failureOf(err);
    }
  };
  const remove = async (tenant: string) => {
    let failure = await deleteTenant(tenant);
    if (failure?.kind === 'TenantNotEmpty' && plan.purges.has(tenant)) {
      const purgeFailure = await purge(tenant);
      if (purgeFailure) failure = purgeFailure;
      else if (outcome.purged.has(tenant)) failure = await deleteTenant(tenant);
    }
    if (!failure) return;
    outcome.deleteFailures.set(tenant, failure);
    if (failure.kind === 'TenantNotEmpty') outcome.retained.add(tenant);
    else if (failure.kind === PoolReason.QuotaPolicyNotWritable) outcome.failure = failure;
  };
  await eachWrite(plan.deletes, remove, ledgerConcurrency);
  // A registered tenant the master no longer holds, and no Binding wants, is forgotten.
  for (const tenant of [...registry])
    if (
      !byTenant.has(tenant) &&
      !plan.desired.has(tenant) &&
      !plan.contested.has(tenant) &&
      !plan.overTotal.has(tenant)
    )
      registry.delete(tenant);
  await save();
  return outcome;
}

function failureOf(err: unknown): LedgerFailure {
  if (err instanceof LedgerError) return err.failure;
  return { kind: PoolReason.LedgerUnreachable, message: err instanceof Error ? err.message : String(err) };
}
