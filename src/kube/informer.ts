// List+watch of one kind into an indexed cache. It tracks resourceVersions (bookmarks included),
// relists on 410 Gone, retries every error with jittered backoff, re-delivers the cache periodically
// (resync), and reports its health. It never stops on its own: only stop() ends it.
import type { Status } from 'kubernetes-types/meta/v1.js';
import type { KubeClient, ObjectList } from './client.ts';
import { type Clock, pause, realClock, type Timer } from './clock.ts';
import { ApiError } from './errors.ts';
import { log } from './log.ts';
import { watchRestarts } from './metrics.ts';
import type { KubeObject } from './object.ts';
import { WatchLines } from './watch-lines.ts';

export type InformerEvent = 'add' | 'update' | 'delete' | 'resync';
export type InformerHandler<T> = (event: InformerEvent, obj: T, old?: T) => void;
export type Indexer<T> = (obj: T) => string[];

export interface InformerOptions<T> {
  apiVersion: string;
  kind: string;
  /** Watch one namespace only; all namespaces (or cluster scope) when omitted. */
  namespace?: string;
  labelSelector?: string;
  fieldSelector?: string;
  /** Re-deliver every cached object this often (0: never). */
  resyncMs?: number;
  indexers?: Record<string, Indexer<T>>;
  /** Server-side watch timeout range in seconds; each watch picks a random value in it. */
  watchTimeoutSeconds?: [number, number];
  pageSize?: number;
  /** The retry waits, the resync period and the idle limit of a watch run on it. */
  clock?: Clock;
}

export interface InformerHealth {
  synced: boolean;
  watching: boolean;
  /** When the last watch event came, in ms since the epoch (a wall-clock report, not a timer). */
  lastEventAt: number | undefined;
  restarts: number;
  lastError: string | undefined;
}

/** What a process needs of an informer of any kind to run it: its lifecycle and whether it synced. */
export interface RunnableInformer {
  readonly kind: string;
  start(): void;
  stop(): Promise<void>;
  hasSynced(): boolean;
  waitForSync(): Promise<void>;
  health(): InformerHealth;
}

export function objectKey(obj: KubeObject): string {
  return obj.metadata.namespace ? `${obj.metadata.namespace}/${obj.metadata.name}` : obj.metadata.name!;
}

/** A meta/v1 WatchEvent with its object decoded: one of the watched kind, or a Status on ERROR. */
type WatchEvent<T> =
  | { type: 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK'; object: T }
  | { type: 'ERROR'; object: Status };

export class Informer<T extends KubeObject = KubeObject> implements RunnableInformer {
  private readonly client: KubeClient;
  private readonly options: InformerOptions<T>;
  private readonly cache = new Map<string, T>();
  private readonly indexes = new Map<string, Map<string, Set<string>>>();
  private readonly handlers: InformerHandler<T>[] = [];
  private readonly syncWaiters: (() => void)[] = [];
  private resourceVersion: string | undefined;
  private abort: AbortController | undefined;
  private running: Promise<void> | undefined;
  private resyncTimer: Timer | undefined;
  private stopped = false;
  /** Ends a wait between failed watches. */
  private readonly stopping = new AbortController();
  private readonly healthState: InformerHealth = {
    synced: false,
    watching: false,
    lastEventAt: undefined,
    restarts: 0,
    lastError: undefined,
  };
  private readonly logger;
  private readonly clock: Clock;

  constructor(client: KubeClient, options: InformerOptions<T>) {
    this.client = client;
    this.options = options;
    this.clock = options.clock ?? realClock;
    for (const name of Object.keys(options.indexers ?? {})) this.indexes.set(name, new Map());
    this.logger = log.child({
      informer: options.kind,
      ...(options.namespace ? { namespace: options.namespace } : {}),
    });
  }

  get kind(): string {
    return this.options.kind;
  }

  on(handler: InformerHandler<T>): void {
    this.handlers.push(handler);
  }

  /** Adds an index; objects already cached are indexed at once. */
  addIndexer(name: string, fn: Indexer<T>): void {
    if (this.indexes.has(name)) return;
    this.options.indexers = { ...this.options.indexers, [name]: fn };
    this.indexes.set(name, new Map());
    for (const [key, obj] of this.cache) this.indexOne(name, fn, key, obj);
  }

  start(): void {
    if (this.running) return;
    this.running = this.run();
    if (this.options.resyncMs) this.scheduleResync(this.options.resyncMs);
  }

  private scheduleResync(periodMs: number): void {
    this.resyncTimer = this.clock.after(periodMs, () => {
      this.scheduleResync(periodMs);
      for (const obj of this.cache.values()) this.emit('resync', obj);
    });
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.resyncTimer?.cancel();
    this.abort?.abort();
    this.stopping.abort();
    await this.running;
  }

  hasSynced(): boolean {
    return this.healthState.synced;
  }

  waitForSync(): Promise<void> {
    if (this.healthState.synced) return Promise.resolve();
    return new Promise((resolve) => this.syncWaiters.push(resolve));
  }

  health(): InformerHealth {
    return { ...this.healthState };
  }

  get(name: string, namespace?: string): T | undefined {
    return this.cache.get(namespace ? `${namespace}/${name}` : name);
  }

  list(namespace?: string): T[] {
    const all = [...this.cache.values()];
    return namespace === undefined ? all : all.filter((o) => o.metadata.namespace === namespace);
  }

  /** Objects whose indexer `index` yields `value`. */
  byIndex(index: string, value: string): T[] {
    const keys = this.indexes.get(index)?.get(value);
    if (!keys) return [];
    return [...keys].map((k) => this.cache.get(k)!).filter(Boolean);
  }

  private async run(): Promise<void> {
    let backoffMs = 1000;
    while (!this.stopped) {
      try {
        if (this.resourceVersion === undefined) await this.relist();
        await this.watch();
        backoffMs = 1000;
      } catch (err) {
        if (this.stopped) break;
        this.healthState.watching = false;
        this.healthState.restarts += 1;
        this.healthState.lastError = err instanceof Error ? err.message : String(err);
        watchRestarts.inc({ kind: this.options.kind });
        if (err instanceof ApiError && err.isGone) {
          this.resourceVersion = undefined;
          continue;
        }
        const delay = backoffMs * (0.5 + Math.random());
        this.logger.warn(
          { err: this.healthState.lastError, retryInMs: Math.round(delay) },
          'watch failed; retrying',
        );
        await pause(this.clock, delay, this.stopping.signal);
        backoffMs = Math.min(backoffMs * 2, 30_000);
      }
    }
    this.healthState.watching = false;
  }

  private async collectionPath(): Promise<string> {
    return this.client.resources.collectionPath({
      apiVersion: this.options.apiVersion,
      kind: this.options.kind,
      namespace: this.options.namespace,
    });
  }

  private selectorQuery() {
    return { labelSelector: this.options.labelSelector, fieldSelector: this.options.fieldSelector };
  }

  /** Lists everything (paginated) and reconciles the cache with it, emitting the differences. */
  private async relist(): Promise<void> {
    const path = await this.collectionPath();
    const fresh = new Map<string, T>();
    let token: string | undefined;
    let resourceVersion: string | undefined;
    do {
      const page = await this.client.request<ObjectList<T>>('GET', path, {
        query: { ...this.selectorQuery(), limit: this.options.pageSize ?? 500, continue: token },
      });
      for (const item of page.items) {
        // List items carry no apiVersion/kind; handlers expect whole objects.
        item.apiVersion = this.options.apiVersion;
        item.kind = this.options.kind;
        fresh.set(objectKey(item), item);
      }
      token = page.metadata.continue || undefined;
      resourceVersion = page.metadata.resourceVersion;
    } while (token);
    for (const [key, old] of this.cache) if (!fresh.has(key)) this.remove(key, old);
    for (const [key, obj] of fresh) this.upsert(key, obj);
    this.resourceVersion = resourceVersion;
    if (!this.healthState.synced) {
      this.healthState.synced = true;
      for (const w of this.syncWaiters.splice(0)) w();
    }
  }

  private async watch(): Promise<void> {
    const [min, max] = this.options.watchTimeoutSeconds ?? [300, 600];
    const timeoutSeconds = Math.floor(min + Math.random() * (max - min));
    this.abort = new AbortController();
    // stop() may have come while this informer listed, with no watch for it to abort: open none.
    if (this.stopped) return;
    // A stream that goes quiet past the server's own timeout is dead: abort it and start over.
    const idleLimitMs = (timeoutSeconds + 30) * 1000;
    const idleTimer = () => this.clock.after(idleLimitMs, () => this.abort?.abort(), { keepAlive: true });
    let idle = idleTimer();
    try {
      const res = await this.client.send('GET', await this.collectionPath(), {
        query: {
          ...this.selectorQuery(),
          watch: 1,
          resourceVersion: this.resourceVersion,
          allowWatchBookmarks: true,
          timeoutSeconds,
        },
        signal: this.abort.signal,
        timeoutMs: 0,
      });
      if (res.statusCode !== 200) {
        throw ApiError.fromResponse(res.statusCode, await res.body.text(), `watch ${this.options.kind}`);
      }
      this.healthState.watching = true;
      this.healthState.lastError = undefined;
      const lines = new WatchLines();
      for await (const chunk of res.body) {
        idle.cancel();
        idle = idleTimer();
        for (const line of lines.push(chunk)) this.apply(JSON.parse(line) as WatchEvent<T>);
      }
    } finally {
      idle.cancel();
      this.healthState.watching = false;
    }
  }

  private apply(event: WatchEvent<T>): void {
    this.healthState.lastEventAt = Date.now();
    if (event.type === 'ERROR') {
      const status = event.object;
      throw new ApiError(status.code ?? 500, status.reason ?? 'Unknown', status.message ?? 'watch error');
    }
    this.resourceVersion = event.object.metadata.resourceVersion;
    if (event.type === 'BOOKMARK') return;
    const key = objectKey(event.object);
    if (event.type === 'DELETED') {
      const old = this.cache.get(key);
      if (old) this.remove(key, event.object);
    } else {
      this.upsert(key, event.object);
    }
  }

  private upsert(key: string, obj: T): void {
    // Field-manager bookkeeping is large and never read by controllers: keep it out of the cache.
    delete obj.metadata.managedFields;
    const old = this.cache.get(key);
    if (old && old.metadata.resourceVersion === obj.metadata.resourceVersion) return;
    if (old) this.unindex(key, old);
    this.cache.set(key, obj);
    this.index(key, obj);
    this.emit(old ? 'update' : 'add', obj, old);
  }

  private remove(key: string, last: T): void {
    const old = this.cache.get(key);
    if (old) this.unindex(key, old);
    this.cache.delete(key);
    this.emit('delete', last, old);
  }

  private index(key: string, obj: T): void {
    for (const [name, fn] of Object.entries(this.options.indexers ?? {})) this.indexOne(name, fn, key, obj);
  }

  private indexOne(name: string, fn: Indexer<T>, key: string, obj: T): void {
    const index = this.indexes.get(name)!;
    for (const value of fn(obj)) {
      const keys = index.get(value) ?? new Set<string>();
      keys.add(key);
      index.set(value, keys);
    }
  }

  private unindex(key: string, obj: T): void {
    for (const [name, fn] of Object.entries(this.options.indexers ?? {})) {
      const index = this.indexes.get(name)!;
      for (const value of fn(obj)) {
        const keys = index.get(value);
        keys?.delete(key);
        if (keys?.size === 0) index.delete(value);
      }
    }
  }

  private emit(event: InformerEvent, obj: T, old?: T): void {
    for (const h of this.handlers) {
      try {
        h(event, obj, old);
      } catch (err) {
        this.logger.error({ err: String(err) }, 'event handler threw');
      }
    }
  }
}
