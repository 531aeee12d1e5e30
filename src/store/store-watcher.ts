// Observes each master its subscribers name, every pollMs, and tells them when what the store reports
// changed (capacity, segments, tenants, health), so status follows the store within a poll interval.
// Each observation reads each admin route once; controllers read the latest observation instead of
// scraping again.
import { log } from '../kube/log.ts';
import { observeStore, type StoreObservation } from './observe.ts';
import { gauge } from './prometheus.ts';
import { countScrapeFailures } from './scrape-metrics.ts';

interface Watched {
  subscribers: Map<string, () => void>;
  latest?: StoreObservation;
  digest?: string;
  timer?: NodeJS.Timeout;
  inFlight?: Promise<StoreObservation>;
}

const watchedFamilies = [
  'master_total_capacity_bytes',
  'master_allocated_bytes',
  'master_total_file_capacity_bytes',
  'master_allocated_file_size_bytes',
  // Objects on the disk tier: a failover's re-registration is followed as it moves (status.lastFailover).
  'file_cache_nums_',
];

/** What a status could show from this observation; volatile counters are reduced to what matters. */
export function significantDigest(o: StoreObservation): string {
  const parts: unknown[] = [o.health.ok ? o.health.value : o.health.reason];
  if (o.metrics?.ok) {
    const f = o.metrics.value;
    parts.push(watchedFamilies.map((n) => gauge(f, n)));
    for (const [name, samples] of f) if (name.startsWith('mooncake_tenant_quota_')) parts.push(name, samples);
    parts.push(
      [
        'master_put_start_requests_total',
        'master_put_end_requests_total',
        'master_put_revoke_requests_total',
      ].map((n) => (gauge(f, n) ?? 0) > 0),
    );
  } else {
    parts.push(o.metrics?.reason);
  }
  if (o.segments?.ok) {
    const l = o.segments.value;
    parts.push(
      l.served
        ? l.segments.map((s) => [s.segmentId, s.teEndpoint, s.status, s.protocol, (s.usedBytes ?? 0) > 0])
        : 'not served',
    );
  } else {
    parts.push(o.segments?.reason);
  }
  return JSON.stringify(parts, (_, v) => (typeof v === 'bigint' ? v.toString() : v));
}

/** The backends behind subscriber ids (`backend/<name>`, `pool/<name>`: both name the backend). */
function backendsOf(ids: Iterable<string>): string[] {
  return [...new Set([...ids].map((id) => id.slice(id.indexOf('/') + 1)))];
}

export class StoreWatcher {
  private readonly pollMs: number;
  private readonly watched = new Map<string, Watched>();

  constructor(pollMs = 1000) {
    this.pollMs = pollMs;
  }

  /** Subscribes `id` to a master; onChange runs when its observation changes. */
  private watch(address: string, id: string, onChange: () => void): void {
    let w = this.watched.get(address);
    if (!w) {
      w = { subscribers: new Map() };
      this.watched.set(address, w);
      this.schedule(address, w, 0);
    }
    w.subscribers.set(id, onChange);
  }

  /** Drops a subscription; the master is no longer polled once nobody watches it. */
  private unwatch(address: string, id: string): void {
    const w = this.watched.get(address);
    if (!w) return;
    w.subscribers.delete(id);
    if (w.subscribers.size === 0) {
      clearTimeout(w.timer);
      this.watched.delete(address);
    }
  }

  /**
   * Keeps `id` subscribed to exactly `address`, or to nothing when it is undefined (a subscriber
   * follows its master as it moves). True when the subscription to `address` is new.
   */
  follow(id: string, address: string | undefined, onChange: () => void): boolean {
    const fresh = address !== undefined && !this.watched.get(address)?.subscribers.has(id);
    for (const [a, w] of [...this.watched]) if (a !== address && w.subscribers.has(id)) this.unwatch(a, id);
    if (address !== undefined) this.watch(address, id, onChange);
    return fresh;
  }

  /** Drops every subscription of `id`. */
  unfollow(id: string): void {
    for (const [a, w] of [...this.watched]) if (w.subscribers.has(id)) this.unwatch(a, id);
  }

  latest(address: string): StoreObservation | undefined {
    return this.watched.get(address)?.latest;
  }

  /**
   * Observes now (after a write to the store, say) and returns the fresh observation. `caller`, the
   * subscriber asking, is not told of the change it is handed: it would only run its pass again.
   */
  async refresh(address: string, caller?: string): Promise<StoreObservation> {
    const w = this.watched.get(address);
    if (!w) return observeStore(address);
    return this.observe(address, w, caller);
  }

  private schedule(address: string, w: Watched, delay: number): void {
    w.timer = setTimeout(async () => {
      await this.observe(address, w).catch((err) =>
        log.warn({ err: String(err), address }, 'store observation failed'),
      );
      if (this.watched.get(address) === w) this.schedule(address, w, this.pollMs);
    }, delay);
    w.timer.unref();
  }

  private observe(address: string, w: Watched, caller?: string): Promise<StoreObservation> {
    // Concurrent callers share one observation: one read per route.
    w.inFlight ??= observeStore(address)
      .then((o) => {
        countScrapeFailures(backendsOf(w.subscribers.keys()), o);
        return o;
      })
      .finally(() => {
        w.inFlight = undefined;
      });
    return w.inFlight.then((o) => {
      const digest = significantDigest(o);
      const changed = digest !== w.digest;
      w.latest = o;
      w.digest = digest;
      if (changed) for (const [id, notify] of w.subscribers) if (id !== caller) notify();
      return o;
    });
  }

  stop(): void {
    for (const w of this.watched.values()) clearTimeout(w.timer);
    this.watched.clear();
  }
}
