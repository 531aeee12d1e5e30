import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { asksToStepDown, type Lease, stepDownAnnotation } from '../../src/kube/leader-election.ts';
import {
  attemptBudgetMs,
  guaranteedOutageMs,
  heldRecordExpired,
  type LeaseTimings,
  leaseFreshness,
  leaseSeconds,
  leaseTimingProblems,
  minStandDownMarginMs,
  nextRenewalDelayMs,
  standDownAt,
} from '../../src/kube/lease-timing.ts';

const t: LeaseTimings = { leaseDurationMs: 8000, renewDeadlineMs: 7000, retryPeriodMs: 250 };

describe('lease timing rules', () => {
  it('accepts the store and operator timings', () => {
    assert.deepEqual(leaseTimingProblems(t), []);
    assert.deepEqual(
      leaseTimingProblems({ leaseDurationMs: 15000, renewDeadlineMs: 10000, retryPeriodMs: 2000 }),
      [],
    );
  });

  it('refuses a lease duration in fractions of a second, which a Lease cannot record', () => {
    assert.match(leaseTimingProblems({ ...t, leaseDurationMs: 7500 }).join(), /whole seconds/);
  });

  it('refuses a renew deadline closer to the lease duration than the stand-down margin', () => {
    const problems = leaseTimingProblems({ ...t, renewDeadlineMs: 7600 });
    assert.match(problems.join(), /at least 500 ms below the lease duration/);
    assert.deepEqual(leaseTimingProblems({ ...t, renewDeadlineMs: 8000 - minStandDownMarginMs }), []);
  });

  it('refuses a renew deadline that leaves room for fewer than two renewals', () => {
    assert.match(
      leaseTimingProblems({ ...t, retryPeriodMs: 4000 }).join(),
      /at least twice the retry period/,
    );
  });

  it('refuses values that are not positive whole milliseconds', () => {
    assert.match(leaseTimingProblems({ ...t, retryPeriodMs: 0 }).join(), /retryPeriodMs must be a positive/);
    assert.match(leaseTimingProblems({ ...t, renewDeadlineMs: 1.5 }).join(), /renewDeadlineMs must be/);
  });

  it('records the duration in whole seconds', () => {
    assert.equal(leaseSeconds(t), 8);
  });
});

describe('a leader stands down at the renew deadline after sending its last successful renewal', () => {
  it('counts from the send, and reports the Lease age and the time left', () => {
    assert.equal(standDownAt(1000, t), 8000);
    assert.deepEqual(leaseFreshness(3000, 1000, t), { ageMs: 2000, remainingMs: 5000, fresh: true });
    assert.deepEqual(leaseFreshness(8000, 1000, t), { ageMs: 7000, remainingMs: 0, fresh: false });
  });

  it('before any candidate may take the Lease, by at least the margin, whenever the candidate saw the renewal', () => {
    for (const timings of [t, { leaseDurationMs: 5000, renewDeadlineMs: 4500, retryPeriodMs: 500 }]) {
      for (const sentAt of [0, 123.4, 5000]) {
        // The apiserver commits the renewal after the send; a candidate sees it no earlier than that.
        for (const seenAfterSendMs of [0, 1, 40, 2000]) {
          const observedAt = sentAt + seenAfterSendMs;
          const earliestTake = observedAt + leaseSeconds(timings) * 1000;
          assert.ok(standDownAt(sentAt, timings) + minStandDownMarginMs <= earliestTake);
          assert.equal(heldRecordExpired(earliestTake - 1, observedAt, leaseSeconds(timings)), false);
          assert.equal(heldRecordExpired(earliestTake, observedAt, leaseSeconds(timings)), true);
        }
      }
    }
  });
});

describe('one Lease call', () => {
  it('may take two retry periods, at least a second', () => {
    assert.equal(attemptBudgetMs(0, t), 1000);
    assert.equal(attemptBudgetMs(0, { ...t, retryPeriodMs: 2000 }), 4000);
  });

  it('never runs past the leader stand-down moment', () => {
    assert.equal(attemptBudgetMs(6500, t, 7000), 500);
    assert.equal(attemptBudgetMs(7000, t, 7000), 0);
    assert.equal(attemptBudgetMs(7200, t, 7000), 0);
  });
});

describe('the outage a leader rides out whatever the phase of its renewals', () => {
  it('is the renew deadline less a retry period, the retry after a failure and two round trips', () => {
    assert.equal(guaranteedOutageMs(t, 20), 7000 - 250 - 100 - 40);
    const slow = { leaseDurationMs: 5000, renewDeadlineMs: 3500, retryPeriodMs: 500 };
    assert.equal(guaranteedOutageMs(slow, 0), 2900);
  });

  it('comes from renewing every retry period, and retrying soon after a failure', () => {
    assert.equal(nextRenewalDelayMs(t, false), 250);
    assert.equal(nextRenewalDelayMs(t, true), 100);
    assert.equal(nextRenewalDelayMs({ ...t, retryPeriodMs: 80 }, true), 80);
  });
});

describe('the step-down annotation', () => {
  const lease = (names?: string) =>
    ({
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: { name: 'l', annotations: names === undefined ? {} : { [stepDownAnnotation]: names } },
    }) as Lease;

  it('names Pods in a comma-separated list, whole names only', () => {
    assert.equal(asksToStepDown(lease('leader-a,leader-b'), 'leader-b'), true);
    assert.equal(asksToStepDown(lease('leader-a,leader-b'), 'leader'), false);
    assert.equal(asksToStepDown(lease(), 'leader-a'), false);
    assert.equal(asksToStepDown(lease('leader-a'), undefined), false);
  });
});
