// A level-triggered controller: informers map events to keys, a work queue de-duplicates them, and
// workers run the reconcile function with backoff on error and delayed requeue on request.
import { type Informer, type InformerEvent, objectKey } from './informer.ts';
import { type Logger, log } from './log.ts';
import { queueDepth, reconcileDuration, reconcileTotal } from './metrics.ts';
import type { KubeObject } from './object.ts';
import { type RateLimits, WorkQueue } from './workqueue.ts';

export interface ReconcileResult {
  /** Reconcile this key again after this long (the observe interval). */
  requeueAfterMs?: number;
}

export interface ReconcileContext {
  logger: Logger;
  /** Consecutive failures of this key so far. */
  retries: number;
}

export type Reconcile = (key: string, ctx: ReconcileContext) => Promise<ReconcileResult | undefined>;

/** Maps an informer event to the keys of the objects this controller should reconcile. */
export type KeyMapper<T> = (obj: T, event: InformerEvent, old?: T) => string[];

export interface ControllerOptions {
  name: string;
  reconcile: Reconcile;
  /** Workers; a key still never runs concurrently with itself. */
  concurrency?: number;
  rateLimits?: Partial<RateLimits>;
}

export class Controller {
  readonly name: string;
  readonly queue: WorkQueue;
  private readonly options: ControllerOptions;
  private readonly logger: Logger;
  private workers: Promise<void>[] = [];
  private started = false;

  constructor(options: ControllerOptions) {
    this.options = options;
    this.name = options.name;
    this.queue = new WorkQueue(options.rateLimits);
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
    queueDepth.set({ controller: this.name }, this.queue.depth);
  }

  start(): void {
    if (this.started) return;
    this.started = true;
    const n = this.options.concurrency ?? 1;
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
      queueDepth.set({ controller: this.name }, this.queue.depth);
      const started = performance.now();
      const logger = this.logger.child({ key });
      try {
        const result = await this.options.reconcile(key, { logger, retries: this.queue.retries(key) });
        this.queue.forget(key);
        if (result?.requeueAfterMs !== undefined) {
          this.queue.addAfter(key, result.requeueAfterMs);
          reconcileTotal.inc({ controller: this.name, result: 'requeue' });
        } else {
          reconcileTotal.inc({ controller: this.name, result: 'success' });
        }
      } catch (err) {
        reconcileTotal.inc({ controller: this.name, result: 'error' });
        logger.error(
          { err: err instanceof Error ? err.message : String(err) },
          'reconcile failed; retrying with backoff',
        );
        this.queue.addRateLimited(key);
      } finally {
        reconcileDuration.observe({ controller: this.name }, (performance.now() - started) / 1000);
        this.queue.done(key);
      }
    }
  }
}

/** The object's own key. */
export const ownKey: KeyMapper<KubeObject> = (obj) => [objectKey(obj)];

/** The key of the object's controlling owner of `kind` (`namespaced`: whether the owner kind is). */
export function ownerKey(kind: string, namespaced: boolean): KeyMapper<KubeObject> {
  return (obj) => {
    const owner = obj.metadata.ownerReferences?.find((r) => r.controller && r.kind === kind);
    if (!owner) return [];
    return [namespaced && obj.metadata.namespace ? `${obj.metadata.namespace}/${owner.name}` : owner.name];
  };
}

/** Passes only events that matter for a spec: creation, deletion, a generation or deletion change. */
export function onSpecChange<T extends KubeObject>(map: KeyMapper<T>): KeyMapper<T> {
  return (obj, event, old) => {
    if (event === 'update' && old) {
      const same =
        old.metadata.generation === obj.metadata.generation &&
        old.metadata.deletionTimestamp === obj.metadata.deletionTimestamp &&
        JSON.stringify(old.metadata.finalizers) === JSON.stringify(obj.metadata.finalizers);
      if (same) return [];
    }
    return map(obj, event, old);
  };
}

/** Splits a `namespace/name` (or `name`) key. */
export function splitKey(key: string): { namespace?: string; name: string } {
  const i = key.indexOf('/');
  return i < 0 ? { name: key } : { namespace: key.slice(0, i), name: key.slice(i + 1) };
}
