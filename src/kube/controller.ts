// A level-triggered controller: informers map events to keys, a work queue de-duplicates them, and
// workers run the reconcile function with backoff on error and delayed requeue on request.
import { type Clock, realClock } from './clock.ts';
import { type Informer, type InformerEvent, objectKey } from './informer.ts';
import { type Logger, log } from './log.ts';
import {
  activeWorkers,
  maxConcurrentReconciles,
  reconcileErrors,
  reconcileTime,
  reconcileTotal,
} from './metrics.ts';
import type { KubeObject } from './object.ts';
import { type RateLimits, WorkQueue } from './workqueue.ts';

export interface ReconcileResult {
  /** Reconcile this key again after this long (the observe interval). */
  requeueAfterMs?: number;
}

export type Reconcile = (key: string) => Promise<ReconcileResult | undefined>;

/** Maps an informer event to the keys of the objects this controller should reconcile. */
export type KeyMapper<T> = (obj: T, event: InformerEvent, old?: T) => string[];

export interface ControllerOptions {
  name: string;
  reconcile: Reconcile;
  /** Workers; a key still never runs concurrently with itself. */
  concurrency?: number;
  rateLimits?: Partial<RateLimits>;
  /** The queue's delays and the reconcile durations run on it. */
  clock?: Clock;
}

export class Controller {
  readonly name: string;
  readonly queue: WorkQueue;
  private readonly options: ControllerOptions;
  private readonly logger: Logger;
  private readonly clock: Clock;
  private workers: Promise<void>[] = [];
  private started = false;

  constructor(options: ControllerOptions) {
    this.options = options;
    this.name = options.name;
    this.clock = options.clock ?? realClock;
    this.queue = new WorkQueue(options.rateLimits, options.name, this.clock);
    this.logger = log.child({ controller: options.name });
  }

  /** Routes an informer's events through `map` into this controller's queue. */
  watch<T extends KubeObject>(informer: Informer<T>, map: KeyMapper<T>): this {
    informer.on((event, obj, old) => {
      for (const key of map(obj, event, old)) this.enqueue(key);
    });
    return this;
  }

  enqueue(key: string): void {
    this.queue.add(key);
  }

  start(): void {
    if (this.started) return;
    this.started = true;
    const n = this.options.concurrency ?? 1;
    maxConcurrentReconciles.set({ controller: this.name }, n);
    activeWorkers.set({ controller: this.name }, 0);
    // As controller-runtime does, every result starts at zero so a rate over it reads 0, not nothing.
    reconcileErrors.inc({ controller: this.name }, 0);
    for (const result of ['success', 'error', 'requeue', 'requeue_after'])
      reconcileTotal.inc({ controller: this.name, result }, 0);
    this.workers = Array.from({ length: n }, () => this.work());
  }

  /** Stops taking keys and waits for the reconciles in flight to finish. */
  async stop(): Promise<void> {
    this.queue.shutDown();
    await Promise.all(this.workers);
  }

  private async work(): Promise<void> {
    for (;;) {
      const key = await this.queue.get();
      if (key === undefined) return;
      const labels = { controller: this.name };
      activeWorkers.inc(labels);
      const started = this.clock.now();
      try {
        const result = await this.options.reconcile(key);
        this.queue.forget(key);
        if (result?.requeueAfterMs !== undefined) {
          this.queue.addAfter(key, result.requeueAfterMs);
          reconcileTotal.inc({ ...labels, result: 'requeue_after' });
        } else {
          reconcileTotal.inc({ ...labels, result: 'success' });
        }
      } catch (err) {
        reconcileTotal.inc({ ...labels, result: 'error' });
        reconcileErrors.inc(labels);
        this.logger.error(
          { key, err: err instanceof Error ? err.message : String(err) },
          'reconcile failed; retrying with backoff',
        );
        this.queue.addRateLimited(key);
      } finally {
        reconcileTime.observe(labels, (this.clock.now() - started) / 1000);
        activeWorkers.dec(labels);
        this.queue.done(key);
      }
    }
  }
}

/** The object's own key. */
export const ownKey: KeyMapper<KubeObject> = (obj) => [objectKey(obj)];

/** Splits a `namespace/name` (or `name`) key. */
export function splitKey(key: string): { namespace?: string; name: string } {
  const i = key.indexOf('/');
  return i < 0 ? { name: key } : { namespace: key.slice(0, i), name: key.slice(i + 1) };
}
