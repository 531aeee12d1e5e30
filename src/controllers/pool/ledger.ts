// Executes a ledger plan against one master: list once, PUT what differs, DELETE what this operator
// registered and no Binding wants. A delete the master refuses (tenant not empty) is retained. A tenant
// enters the registry before it is first written, and leaves it once it is gone from the master.

import { eachWrite } from '../../context/apply.ts';
import {
  type LedgerEntry,
  type LedgerError,
  type LedgerFailure,
  TenantLedger,
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
  /** The tenant registry as the pass leaves it. */
  registered: Set<string>;
  wrote: boolean;
}

/** Stores the tenant registry (the names this operator registered on the master). */
export type SaveRegistry = (tenants: Set<string>) => Promise<void>;

/** `unlisted` is the plan made without the master's listing; it stands when the listing fails. */
export async function executeLedger(
  address: string,
  input: Omit<PlanInput, 'ledger'>,
  unlisted: LedgerPlan,
  saveRegistry: SaveRegistry,
): Promise<LedgerOutcome> {
  const ledger = new TenantLedger(address);
  const outcome: LedgerOutcome = {
    plan: unlisted,
    ledgerOff: false,
    retained: new Set(),
    putFailures: new Map(),
    deleteFailures: new Map(),
    deleted: new Set(),
    registered: input.registered,
    wrote: false,
  };
  let entries: LedgerEntry[];
  try {
    entries = await ledger.list();
  } catch (err) {
    const failure = (err as LedgerError).failure;
    if (failure.kind === 'MultiTenancyDisabled') outcome.ledgerOff = true;
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
      if (failure.kind === 'MultiTenancyDisabled') outcome.ledgerOff = true;
      else outcome.putFailures.set(tenant, failure);
      if (failure.kind === 'QuotaPolicyNotWritable') outcome.failure = failure;
    }
  };
  await eachWrite(plan.puts, put, ledgerConcurrency);
  if (outcome.ledgerOff) return outcome;
  const remove = async (tenant: string) => {
    try {
      await ledger.delete(tenant);
      outcome.wrote = true;
      outcome.deleted.add(tenant);
      registry.delete(tenant);
    } catch (err) {
      const failure = (err as LedgerError).failure;
      outcome.deleteFailures.set(tenant, failure);
      if (failure.kind === 'TenantNotEmpty') outcome.retained.add(tenant);
      else if (failure.kind === 'QuotaPolicyNotWritable') outcome.failure = failure;
    }
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
