// The timing of leader election on a Lease, as pure functions of the clock (an argument): when a
// leader must stop serving, how long one Lease call may take, when a candidate may take the Lease,
// and which timing sets are safe. See docs/store-program.md ("Lease timing").

export interface LeaseTimings {
  /** How long a Lease record stays valid to a candidate, counted from when the candidate saw it change. */
  leaseDurationMs: number;
  /**
   * How long after sending its last successful renewal a leader may go on leading. Counted from the
   * send, not the answer: the apiserver may commit the renewal (and a candidate may see it) at once.
   */
  renewDeadlineMs: number;
  /** How often the leader renews and a candidate tries. */
  retryPeriodMs: number;
}

/**
 * The least time between a leader standing down and the earliest moment a candidate may take over:
 * room for a late timer and for the master to die after SIGKILL.
 */
export const minStandDownMarginMs = 500;
/** One Lease call may take at least this long, even with a short retry period (a busy apiserver). */
const minAttemptBudgetMs = 1000;

/** Why a timing set is unsafe or unusable, one sentence each; empty when it is fine. */
export function leaseTimingProblems(t: LeaseTimings): string[] {
  const problems: string[] = [];
  for (const [name, value] of Object.entries(t)) {
    if (!Number.isInteger(value) || value <= 0)
      problems.push(`${name} must be a positive whole number of ms`);
  }
  if (problems.length) return problems;
  if (t.leaseDurationMs % 1000 !== 0) {
    problems.push('the lease duration must be whole seconds: a Lease records it in seconds');
  }
  if (t.leaseDurationMs - t.renewDeadlineMs < minStandDownMarginMs) {
    problems.push(
      `the renew deadline must be at least ${minStandDownMarginMs} ms below the lease duration, so a leader stops serving before a standby may take over`,
    );
  }
  if (t.renewDeadlineMs < 2 * t.retryPeriodMs) {
    problems.push(
      'the renew deadline must allow at least two renewals: make it at least twice the retry period',
    );
  }
  return problems;
}

/** `leaseDurationSeconds` as the Lease records it. */
export function leaseSeconds(t: LeaseTimings): number {
  return Math.ceil(t.leaseDurationMs / 1000);
}

/** When a leader whose last successful renewal was sent at `renewSentAt` stops serving. */
export function standDownAt(renewSentAt: number, t: LeaseTimings): number {
  return renewSentAt + t.renewDeadlineMs;
}

/**
 * How long a Lease call started at `now` may take. A leader's call never runs past its stand-down
 * moment (`standDown`); a candidate's has no such bound. Calls overlap (a new one starts every retry
 * period while an older one hangs), so this only bounds how many are open at once.
 */
export function attemptBudgetMs(now: number, t: LeaseTimings, standDown?: number): number {
  const budget = Math.max(minAttemptBudgetMs, 2 * t.retryPeriodMs);
  return standDown === undefined ? budget : Math.max(0, Math.min(budget, standDown - now));
}

/** After a failed renewal the leader tries again this soon (cheap: a refused connection fails at once). */
export const failedRenewalRetryMs = 100;

/** How long a leader waits before its next renewal: a retry period, or less after a failure. */
export function nextRenewalDelayMs(t: LeaseTimings, lastFailed: boolean): number {
  return lastFailed ? Math.min(t.retryPeriodMs, failedRenewalRetryMs) : t.retryPeriodMs;
}

/** The Lease's age to its leader, and whether it may still lead (serve) on it. */
export function leaseFreshness(now: number, renewSentAt: number, t: LeaseTimings) {
  const remainingMs = standDownAt(renewSentAt, t) - now;
  return { ageMs: now - renewSentAt, remainingMs, fresh: remainingMs > 0 };
}

/**
 * Whether a candidate may take a Lease held by another: only once the record it last saw change (at
 * `observedAt`, by its own clock) is older than the duration the record declares.
 */
export function heldRecordExpired(now: number, observedAt: number, leaseDurationSeconds: number): boolean {
  return now >= observedAt + leaseDurationSeconds * 1000;
}

/**
 * The longest API outage a leader rides out whatever the phase of its renewals: the last renewal may
 * have been sent up to a retry period (plus a round trip) before the outage, and the first one after it
 * starts up to the failed-renewal retry late. Round trips are taken as `roundTripMs`.
 */
export function guaranteedOutageMs(t: LeaseTimings, roundTripMs = 20): number {
  return t.renewDeadlineMs - t.retryPeriodMs - nextRenewalDelayMs(t, true) - 2 * roundTripMs;
}

/**
 * The store leader's timing when a backend names none: rides out an API outage of at least 6 s
 * whatever the phase of its renewals (6.75 s measured), stands down a full second before a standby
 * may take over, and a hard-killed leader is replaced in about 8.8 s.
 * Measured in bench/results/failover.json; chosen in docs/decisions/0021-store-lease-timing.md.
 */
export const storeLeaseDefaults: LeaseTimings = {
  leaseDurationMs: 8000,
  renewDeadlineMs: 7000,
  retryPeriodMs: 250,
};

/** The timing as kvpool-store's flags. */
export function leaseTimingFlags(t: LeaseTimings): string[] {
  return [
    `--lease-duration-ms=${t.leaseDurationMs}`,
    `--renew-deadline-ms=${t.renewDeadlineMs}`,
    `--retry-period-ms=${t.retryPeriodMs}`,
  ];
}
