// How long each ledger pass takes and which ones fail, per backend (one pass per master).
import { Counter, Histogram } from 'prom-client';
import { PoolReason } from '../../api/kvcache-pool-conditions.ts';
import { registry } from '../../kube/metrics.ts';
import type { LedgerOutcome } from './ledger.ts';

export const ledgerPassDuration = new Histogram({
  name: 'kvpool_ledger_pass_duration_seconds',
  help: "Time one ledger pass takes against a backend's master: the listing, then every PUT and DELETE it needs.",
  labelNames: ['backend'] as const,
  buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
  registers: [registry],
});

export const ledgerPassFailures = new Counter({
  name: 'kvpool_ledger_pass_failures_total',
  help: 'Ledger passes that did not converge, by backend and the first failure (of the master, else of a tenant write, else of a release): LedgerUnreachable, QuotaPolicyNotWritable, TenantNotEmpty, Error and the like.',
  labelNames: ['backend', 'reason'] as const,
  registers: [registry],
});

export const poolPassStageDuration = new Histogram({
  name: 'kvpool_pool_pass_stage_seconds',
  help: "Time each stage of one pool pass takes, per backend: read (cache, tenant registry, plan), finalizers, ledger (the master's ledger list, PUTs and DELETEs), seed, readBack (the master's figures), bindingStatus, poolStatus.",
  labelNames: ['backend', 'stage'] as const,
  buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
  registers: [registry],
});

/** Times the stages of one pass in order: each call records the time since the previous one. */
export function stageClock(backend: string): (stage: string) => void {
  let last = performance.now();
  return (stage) => {
    const now = performance.now();
    poolPassStageDuration.observe({ backend, stage }, (now - last) / 1000);
    last = now;
  };
}

const knownReasons = [
  PoolReason.LedgerUnreachable,
  PoolReason.QuotaPolicyNotWritable,
  'TenantNotEmpty',
  'Error',
];

/** Why a pass did not converge, or undefined when it did. Pure. */
export function ledgerPassFailure(outcome: LedgerOutcome): string | undefined {
  if (outcome.failure) return outcome.failure.kind;
  return ([...outcome.putFailures.values()][0] ?? [...outcome.deleteFailures.values()][0])?.kind;
}

/** Runs one ledger pass for `backend`, timing it and counting it when it does not converge. */
export async function measureLedgerPass(
  backend: string,
  pass: () => Promise<LedgerOutcome>,
): Promise<LedgerOutcome> {
  // Every reason starts at zero, so a rate over failures reads 0 rather than nothing.
  for (const reason of knownReasons) ledgerPassFailures.inc({ backend, reason }, 0);
  const end = ledgerPassDuration.startTimer({ backend });
  try {
    const outcome = await pass();
    const failure = ledgerPassFailure(outcome);
    if (failure) ledgerPassFailures.inc({ backend, reason: failure });
    return outcome;
  } catch (err) {
    ledgerPassFailures.inc({ backend, reason: 'Error' });
    throw err;
  } finally {
    end();
  }
}
