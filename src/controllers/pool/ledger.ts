// Executes a ledger plan against one master: list once, PUT what differs, DELETE what this operator
// registered and no Binding wants. A delete the master refuses (tenant not empty) is retained.
import pMap from 'p-map';
import {
  type LedgerEntry,
  type LedgerError,
  type LedgerFailure,
  TenantLedger,
} from '../../store/tenant-ledger.ts';
import { type LedgerPlan, type PlanInput, planLedger } from './plan.ts';

/** Ledger requests in flight at once: a pass may carry one per Binding on the master. */
const ledgerConcurrency = 8;

export interface LedgerOutcome {
  plan: LedgerPlan;
  ledgerOff: boolean;
  /** A failure that stopped convergence (listing, or a PUT); undefined when the pass converged. */
  failure?: LedgerFailure;
  /** Domains whose delete the master refused because they hold data. */
  retained: Set<string>;
  deleteFailures: Map<string, LedgerFailure>;
  /** Entries kept as the master has them (contested and retained domains), re-seeded verbatim. */
  kept: Map<string, LedgerEntry>;
  wrote: boolean;
}

/** `unlisted` is the plan made without the master's listing; it stands when the listing fails. */
export async function executeLedger(
  address: string,
  input: Omit<PlanInput, 'ledger'>,
  unlisted: LedgerPlan,
): Promise<LedgerOutcome> {
  const ledger = new TenantLedger(address);
  const outcome: LedgerOutcome = {
    plan: unlisted,
    ledgerOff: false,
    retained: new Set(),
    deleteFailures: new Map(),
    kept: new Map(),
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
  const byTenant = new Map(entries.map((e) => [e.tenant, e]));
  for (const domain of plan.contested.keys()) {
    const e = byTenant.get(domain);
    if (e) outcome.kept.set(domain, e);
  }
  // The first failed PUT stops the ones not yet sent; those in flight finish.
  let putFailure: LedgerFailure | undefined;
  const put = async ({ tenant, bytes }: { tenant: string; bytes: bigint }) => {
    if (putFailure) return;
    try {
      await ledger.put(tenant, bytes);
      outcome.wrote = true;
    } catch (err) {
      putFailure ??= (err as LedgerError).failure;
    }
  };
  await pMap(plan.puts, put, { concurrency: ledgerConcurrency });
  if (putFailure) {
    if (putFailure.kind === 'MultiTenancyDisabled') outcome.ledgerOff = true;
    else outcome.failure = putFailure;
    return outcome;
  }
  const remove = async (tenant: string) => {
    try {
      await ledger.delete(tenant);
      outcome.wrote = true;
    } catch (err) {
      const failure = (err as LedgerError).failure;
      outcome.deleteFailures.set(tenant, failure);
      if (failure.kind === 'TenantNotEmpty') {
        outcome.retained.add(tenant);
        const e = byTenant.get(tenant);
        if (e) outcome.kept.set(tenant, e);
      } else {
        outcome.failure = failure;
      }
    }
  };
  await pMap(plan.deletes, remove, { concurrency: ledgerConcurrency });
  return outcome;
}
