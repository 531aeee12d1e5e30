// Leader election on a coordination.k8s.io Lease with client-go's semantics: a candidate takes the
// Lease only when its record has not changed, by the candidate's own clock, for leaseDuration (so
// clock skew does not matter); a graceful release empties the holder so a standby takes over at once.
// A leader stops leading at renewDeadline after sending its last successful renewal, on its own
// monotonic clock, whatever its calls are doing: every call is bounded by that moment, and a new
// renewal starts every retry period even while an older one hangs. A renewal is one JSON patch that
// tests the leader's own term. Timing rules: lease-timing.ts.
import type { Lease } from 'kubernetes-types/coordination/v1.js';
import type { KubeClient } from './client.ts';
import { type Clock, pause, realClock, timeoutSignal } from './clock.ts';
import { ApiError } from './errors.ts';
import {
  attemptBudgetMs,
  heldRecordExpired,
  type LeaseTimings,
  leaseFreshness,
  leaseSeconds,
  leaseTimingProblems,
  nextRenewalDelayMs,
  standDownAt,
} from './lease-timing.ts';
import { log } from './log.ts';
import type { KubeObject } from './object.ts';
import { microTime } from './time.ts';

export interface LeaderElectionOptions extends Partial<LeaseTimings> {
  namespace: string;
  name: string;
  identity: string;
  /** Whether the Lease asks this candidate to step down: a leader ends its term, a candidate waits. */
  askedToStepDown?: (lease: KubeObject<Lease>) => boolean;
  /** Every wait, call budget and judgement of a Lease's age runs on it. */
  clock?: Clock;
}

/** How a term ended: renewals failed until the deadline, another holder, asked to step down, or stop(). */
export type TermEnd = 'lost' | 'taken' | 'asked' | 'stopped';

type Outcome = 'leading' | 'held' | 'asked' | 'failed';

export const defaultTimings: LeaseTimings = {
  leaseDurationMs: 15_000,
  renewDeadlineMs: 10_000,
  retryPeriodMs: 2_000,
};
const releaseBudgetMs = 2000;

/**
 * Names the candidates (Pod names, comma-separated) that must not lead: a named leader hands the Lease
 * over, and a named candidate does not take it. Written by the operator for a rollout or a drain.
 */
export const stepDownAnnotation = 'kvcache.gpustack.ai/step-down';

/** Whether `lease` asks the candidate running in Pod `podName` to step down (or stay down). */
export function asksToStepDown(lease: KubeObject<Lease>, podName: string | undefined): boolean {
  const named = lease.metadata.annotations?.[stepDownAnnotation]?.split(',') ?? [];
  return Boolean(podName) && named.includes(podName!);
}

export class LeaderElector {
  private readonly client: KubeClient;
  private readonly options: Required<LeaseTimings> & LeaderElectionOptions;
  private readonly timings: LeaseTimings;
  private readonly stopping = new AbortController();
  private readonly inFlight = new Set<Promise<Outcome>>();
  private observed: { record: string; at: number } | undefined;
  private lease: KubeObject<Lease> | undefined;
  private holder: string | undefined;
  private asked = false;
  private leading = false;
  private sentAt: number | undefined;
  private readonly logger;
  private readonly clock: Clock;

  constructor(client: KubeClient, options: LeaderElectionOptions) {
    this.client = client;
    this.clock = options.clock ?? realClock;
    this.options = { ...defaultTimings, ...options };
    const { leaseDurationMs, renewDeadlineMs, retryPeriodMs } = this.options;
    this.timings = { leaseDurationMs, renewDeadlineMs, retryPeriodMs };
    const problems = leaseTimingProblems(this.timings);
    if (problems.length) throw new Error(`leader election timing: ${problems.join('; ')}`);
    this.logger = log.child({ lease: `${options.namespace}/${options.name}`, identity: options.identity });
  }

  /** The holder the last attempt read (this candidate after a win), so callers need no Lease reads of their own. */
  get observedHolder(): string | undefined {
    return this.holder;
  }

  /** Whether the last read Lease asked this candidate to step down (or stay down). */
  get observedAsked(): boolean {
    return this.asked;
  }

  /** The Lease's age and time left to lead on it, while leading; undefined otherwise. */
  freshness(now = this.clock.now()) {
    return this.leading && this.sentAt !== undefined
      ? leaseFreshness(now, this.sentAt, this.timings)
      : undefined;
  }

  /** Campaigns until this candidate leads; resolves false if stop() came first. */
  async acquire(): Promise<boolean> {
    while (!this.stopped) {
      const start = this.clock.now();
      if ((await this.track(this.attempt(attemptBudgetMs(start, this.timings)))) === 'leading') {
        this.leading = true;
        this.sentAt = start;
        this.logger.info('became leader');
        return true;
      }
      await this.pause(this.options.retryPeriodMs * (1 + Math.random() * 0.2));
    }
    return false;
  }

  /**
   * Leads after acquire(): a renewal starts every retry period, each bounded by the stand-down moment
   * (the last successful renewal's send + renewDeadline); resolves when the term ends.
   */
  async lead(): Promise<TermEnd> {
    let end: TermEnd | undefined;
    let failing = false;
    let wake = () => {};
    const finish = (why: TermEnd) => {
      end ??= why;
      wake();
    };
    while (!end && !this.stopped) {
      const now = this.clock.now();
      const standDown = standDownAt(this.sentAt ?? now, this.timings);
      if (now >= standDown) {
        end = 'lost';
        break;
      }
      const budget = attemptBudgetMs(now, this.timings, standDown);
      if (budget > 0) {
        void this.track(this.attempt(budget)).then((outcome) => {
          failing = outcome === 'failed';
          if (outcome === 'leading') this.sentAt = Math.max(this.sentAt ?? now, now);
          else if (outcome === 'held') finish('taken');
          else if (outcome === 'asked') finish('asked');
        });
      }
      // Until the next renewal is due, the stand-down moment, an outcome that ends the term, or stop().
      await new Promise<void>((resolve) => {
        const signal = this.stopping.signal;
        const done = () => {
          timer.cancel();
          signal.removeEventListener('abort', done);
          resolve();
        };
        const delay = Math.min(nextRenewalDelayMs(this.timings, failing), standDown - now);
        const timer = this.clock.after(delay, done, { keepAlive: true });
        signal.addEventListener('abort', done, { once: true });
        wake = done;
      });
    }
    const why = end ?? 'stopped';
    if (why !== 'stopped') {
      this.leading = false;
      this.logger.error({ why }, 'leadership ended');
    }
    return why;
  }

  /** Stops campaigning and renewing; a leader empties the holder so a standby takes over at once. */
  async release(): Promise<void> {
    this.stopping.abort();
    const wasLeading = this.leading;
    this.leading = false;
    // A renewal still in flight would overwrite the release: let it settle first.
    await Promise.allSettled([...this.inFlight]);
    if (wasLeading) await this.emptyHolder();
  }

  /** After a term ended with 'asked': empties the holder, so a standby takes over at once. */
  async handOver(): Promise<void> {
    await Promise.allSettled([...this.inFlight]);
    await this.emptyHolder();
  }

  /** The moment the last term had to end by (on the elector's clock), to bound a graceful stop. */
  get standDown(): number | undefined {
    return this.sentAt === undefined ? undefined : standDownAt(this.sentAt, this.timings);
  }

  private async emptyHolder(): Promise<void> {
    const { signal, timer } = timeoutSignal(this.clock, releaseBudgetMs);
    try {
      const current = await this.find(signal);
      if (!current || current.spec?.holderIdentity !== this.options.identity) return;
      const now = microTime();
      const spec = {
        ...current.spec,
        holderIdentity: '',
        leaseDurationSeconds: 1,
        renewTime: now,
        acquireTime: now,
      };
      await this.write('PUT', { ...current, spec }, signal);
      this.holder = '';
      this.logger.info('released the lease');
    } catch (err) {
      this.logger.warn({ err: String(err) }, 'could not release the lease; it expires on its own');
    } finally {
      timer.cancel();
    }
  }

  private get stopped(): boolean {
    return this.stopping.signal.aborted;
  }

  private pause(ms: number): Promise<void> {
    return pause(this.clock, ms, this.stopping.signal);
  }

  private track(attempt: Promise<Outcome>): Promise<Outcome> {
    this.inFlight.add(attempt);
    void attempt.finally(() => this.inFlight.delete(attempt));
    return attempt;
  }

  private get path(): string {
    const { namespace, name } = this.options;
    return `/apis/coordination.k8s.io/v1/namespaces/${namespace}/leases/${name}`;
  }

  private async find(signal: AbortSignal): Promise<KubeObject<Lease> | undefined> {
    try {
      return await this.client.request<KubeObject<Lease>>('GET', this.path, { signal });
    } catch (err) {
      if (err instanceof ApiError && err.isNotFound) return undefined;
      throw err;
    }
  }

  private write(
    method: 'PUT' | 'POST',
    lease: KubeObject<Lease>,
    signal: AbortSignal,
  ): Promise<KubeObject<Lease>> {
    const path = method === 'PUT' ? this.path : this.path.slice(0, this.path.lastIndexOf('/'));
    return this.client.request<KubeObject<Lease>>(method, path, { body: lease, signal });
  }

  /**
   * A renewal in one request that holds only while this leader's term does (the holder and acquire
   * time it wrote), whatever else changed meanwhile: an annotation, or a late copy of an earlier renewal.
   */
  private renew(
    lease: KubeObject<Lease>,
    now: string,
    seconds: number,
    signal: AbortSignal,
  ): Promise<KubeObject<Lease>> {
    const ops = [
      { op: 'test', path: '/spec/holderIdentity', value: this.options.identity },
      { op: 'test', path: '/spec/acquireTime', value: lease.spec?.acquireTime },
      { op: 'add', path: '/spec/renewTime', value: now },
      { op: 'add', path: '/spec/leaseDurationSeconds', value: seconds },
    ];
    return this.client.request<KubeObject<Lease>>('PATCH', this.path, {
      body: ops,
      contentType: 'application/json-patch+json',
      signal,
    });
  }

  /** One acquire-or-renew within `budgetMs`; the call is abandoned after it, or on stop(). */
  private async attempt(budgetMs: number): Promise<Outcome> {
    const budget = timeoutSignal(this.clock, Math.ceil(budgetMs));
    try {
      return await this.acquireOrRenew(AbortSignal.any([budget.signal, this.stopping.signal]));
    } catch (err) {
      if (!(err instanceof ApiError && (err.isConflict || err.isAlreadyExists)) && !this.stopped) {
        this.logger.warn({ err: String(err) }, 'lease request failed');
      }
      return 'failed';
    } finally {
      budget.timer.cancel();
    }
  }

  private async acquireOrRenew(signal: AbortSignal): Promise<Outcome> {
    const me = this.options.identity;
    const now = microTime();
    const seconds = leaseSeconds(this.timings);
    // A leader renews its term in one patch; when the term is not as it wrote it, it reads and decides.
    if (this.leading && this.lease) {
      try {
        return this.took(await this.renew(this.lease, now, seconds, signal));
      } catch (err) {
        // The term is not as this leader last wrote it: read the Lease and decide.
        if (!(err instanceof ApiError && (err.isInvalid || err.isConflict))) throw err;
      }
    }
    const current = await this.find(signal);
    this.holder = current?.spec?.holderIdentity;
    if (!current) {
      const created = await this.write(
        'POST',
        {
          apiVersion: 'coordination.k8s.io/v1',
          kind: 'Lease',
          metadata: { name: this.options.name, namespace: this.options.namespace },
          spec: {
            holderIdentity: me,
            leaseDurationSeconds: seconds,
            acquireTime: now,
            renewTime: now,
            leaseTransitions: 0,
          },
        },
        signal,
      );
      return this.took(created);
    }
    const spec = current.spec ?? {};
    const record = JSON.stringify([
      spec.holderIdentity,
      spec.renewTime,
      spec.acquireTime,
      spec.leaseTransitions,
    ]);
    if (this.observed?.record !== record) this.observed = { record, at: this.clock.now() };
    const mine = spec.holderIdentity === me;
    this.asked = this.options.askedToStepDown?.(current) ?? false;
    if (this.asked) return mine ? 'asked' : 'held';
    const heldByOther = Boolean(spec.holderIdentity) && !mine;
    if (heldByOther) {
      const expired = heldRecordExpired(
        this.clock.now(),
        this.observed.at,
        spec.leaseDurationSeconds ?? seconds,
      );
      if (this.leading || !expired) return 'held';
    }
    const taken = await this.write(
      'PUT',
      {
        ...current,
        spec: {
          holderIdentity: me,
          leaseDurationSeconds: seconds,
          acquireTime: mine ? spec.acquireTime : now,
          renewTime: now,
          leaseTransitions: (spec.leaseTransitions ?? 0) + (mine ? 0 : 1),
        },
      },
      signal,
    );
    return this.took(taken);
  }

  private took(lease: KubeObject<Lease>): Outcome {
    this.lease = lease;
    this.holder = this.options.identity;
    this.asked = this.options.askedToStepDown?.(lease) ?? false;
    return this.asked ? 'asked' : 'leading';
  }
}
