// A de-duplicating work queue with the semantics of client-go's: a key waits at most once in the
// queue, never runs concurrently with itself (an add while it runs queues it again for after), and
// failures back off per key (exponential) under an overall token-bucket rate limit. A named queue
// reports client-go's workqueue metrics under its name.
import { type Clock, realClock, type Timer } from './clock.ts';
import {
  trackInFlightWork,
  workqueueAdds,
  workqueueDepth,
  workqueueQueueDuration,
  workqueueRetries,
  workqueueWorkDuration,
} from './metrics.ts';

export interface RateLimits {
  /** First per-key retry delay; doubles per consecutive failure. */
  baseDelayMs: number;
  maxDelayMs: number;
  /** Overall retry rate (tokens per second) and burst. */
  qps: number;
  burst: number;
}

export const defaultRateLimits: RateLimits = { baseDelayMs: 5, maxDelayMs: 1_000_000, qps: 10, burst: 100 };

export class WorkQueue {
  private readonly queue: string[] = [];
  private readonly dirty = new Set<string>();
  private readonly processing = new Set<string>();
  private readonly failures = new Map<string, number>();
  private readonly timers = new Map<string, { at: number; timer: Timer }>();
  private readonly waiters: ((key: string | undefined) => void)[] = [];
  private readonly limits: RateLimits;
  /** Backoff delays, the token bucket and the metrics' durations run on it. */
  private readonly clock: Clock;
  private tokens: number;
  private tokensAt: number;
  private shuttingDown = false;
  /** For the metrics: when each waiting key was added, and when each key in process was handed out. */
  private readonly addedAt = new Map<string, number>();
  private readonly startedAt = new Map<string, number>();
  private readonly labels: { name: string; controller: string } | undefined;
  private readonly untrack: (() => void) | undefined;

  constructor(limits: Partial<RateLimits> = {}, name?: string, clock: Clock = realClock) {
    this.limits = { ...defaultRateLimits, ...limits };
    this.clock = clock;
    this.tokens = this.limits.burst;
    this.tokensAt = clock.now();
    if (name) {
      // As client-go's queues do, every series exists from the start, at zero.
      this.labels = { name, controller: name };
      workqueueDepth.set(this.labels, 0);
      workqueueAdds.inc(this.labels, 0);
      workqueueRetries.inc(this.labels, 0);
      this.untrack = trackInFlightWork({
        name,
        runningSeconds: () => [...this.startedAt.values()].map((t) => (clock.now() - t) / 1000),
      });
    }
  }

  /** Queues a key unless it is already waiting; a key being processed is re-queued once it is done. */
  add(key: string): void {
    if (this.shuttingDown || this.dirty.has(key)) return;
    this.dirty.add(key);
    if (this.labels) {
      workqueueAdds.inc(this.labels);
      if (!this.addedAt.has(key)) this.addedAt.set(key, this.clock.now());
    }
    if (!this.processing.has(key)) this.dispatch(key);
    this.reportDepth();
  }

  /** Hands a dirty key to a waiting worker, or queues it. */
  private dispatch(key: string): void {
    const waiter = this.waiters.shift();
    if (waiter) {
      this.handOut(key);
      waiter(key);
    } else {
      this.queue.push(key);
    }
  }

  private handOut(key: string): void {
    this.dirty.delete(key);
    this.processing.add(key);
    if (!this.labels) return;
    const now = this.clock.now();
    const added = this.addedAt.get(key);
    if (added !== undefined) workqueueQueueDuration.observe(this.labels, (now - added) / 1000);
    this.addedAt.delete(key);
    this.startedAt.set(key, now);
  }

  private reportDepth(): void {
    if (this.labels) workqueueDepth.set(this.labels, this.dirty.size);
  }

  /** Queues a key after a delay; an earlier pending delay for the same key wins. */
  addAfter(key: string, delayMs: number): void {
    if (this.shuttingDown) return;
    if (delayMs <= 0) {
      this.add(key);
      return;
    }
    const at = this.clock.now() + delayMs;
    const pending = this.timers.get(key);
    if (pending && pending.at <= at) return;
    pending?.timer.cancel();
    const timer = this.clock.after(delayMs, () => {
      this.timers.delete(key);
      this.add(key);
    });
    this.timers.set(key, { at, timer });
  }

  /** Queues a key after its backoff: the larger of the per-key exponential delay and the bucket's. */
  addRateLimited(key: string): void {
    const n = this.failures.get(key) ?? 0;
    this.failures.set(key, n + 1);
    if (this.labels) workqueueRetries.inc(this.labels);
    const perKey = Math.min(this.limits.baseDelayMs * 2 ** n, this.limits.maxDelayMs);
    this.addAfter(key, Math.max(perKey, this.bucketDelay()));
  }

  /** Consecutive failures recorded for a key. */
  retries(key: string): number {
    return this.failures.get(key) ?? 0;
  }

  /** Clears a key's failure history (after a success). */
  forget(key: string): void {
    this.failures.delete(key);
  }

  private bucketDelay(): number {
    const now = this.clock.now();
    this.tokens = Math.min(this.limits.burst, this.tokens + ((now - this.tokensAt) / 1000) * this.limits.qps);
    this.tokensAt = now;
    this.tokens -= 1;
    return this.tokens >= 0 ? 0 : Math.ceil((-this.tokens / this.limits.qps) * 1000);
  }

  /** The next key to process, or undefined once the queue shuts down. */
  get(): Promise<string | undefined> {
    if (this.shuttingDown) return Promise.resolve(undefined);
    const key = this.queue.shift();
    if (key !== undefined) {
      this.handOut(key);
      this.reportDepth();
      return Promise.resolve(key);
    }
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  /** Marks a key processed; if it was added meanwhile it goes back in the queue. */
  done(key: string): void {
    this.processing.delete(key);
    const started = this.startedAt.get(key);
    if (this.labels && started !== undefined)
      workqueueWorkDuration.observe(this.labels, (this.clock.now() - started) / 1000);
    this.startedAt.delete(key);
    if (this.dirty.has(key)) this.dispatch(key);
    this.reportDepth();
  }

  /** Keys waiting (not counting those being processed or delayed). */
  get depth(): number {
    return this.queue.length;
  }

  /** Stops handing out keys; workers blocked in get() receive undefined. */
  shutDown(): void {
    this.shuttingDown = true;
    this.untrack?.();
    for (const { timer } of this.timers.values()) timer.cancel();
    this.timers.clear();
    for (const w of this.waiters.splice(0)) w(undefined);
  }
}
