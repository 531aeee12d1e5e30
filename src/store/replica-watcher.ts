// Reads what each deployment's ready replicas report about the cache, on its own schedule, and wakes
// the deployment's pass when the verdict those reports give changes. It keeps each replica's previous
// reading, so the verdict follows what the counters did since (replica-trend.ts). A pass reads the
// latest reading and never waits on a replica (one that hangs would otherwise hold every pass of its
// deployment).
import { log } from '../kube/log.ts';
import type { CacheReports } from './replica-reports.ts';
import { readReplicaReports } from './replica-reports.ts';
import { advanceTrend, emptyTrend, type ReplicaReading, readingOf, type Trend } from './replica-trend.ts';

type Read = (endpoints: string[]) => Promise<Map<string, CacheReports>>;

interface Followed {
  endpoints: string[];
  wake: () => void;
  trend: Trend;
  /** What CacheAttached is decided from: none, quiet, active or failing. */
  verdict?: string;
  timer?: NodeJS.Timeout;
}

const verdictOf = (r: ReplicaReading | undefined) => r?.recent ?? 'none';

export class ReplicaReportWatcher {
  private readonly followed = new Map<string, Followed>();
  private readonly pollMs: number;
  private readonly read: Read;
  private readonly now: () => Date;

  constructor(pollMs = 5000, read: Read = readReplicaReports, now: () => Date = () => new Date()) {
    this.pollMs = pollMs;
    this.read = read;
    this.now = now;
  }

  /** Keeps reading `endpoints` for `key` (nothing when empty); `wake` runs when the verdict changes. */
  follow(key: string, endpoints: string[], wake: () => void): void {
    if (endpoints.length === 0) {
      this.unfollow(key);
      return;
    }
    const sorted = [...endpoints].sort();
    const f = this.followed.get(key);
    if (f && f.endpoints.join() === sorted.join()) {
      f.wake = wake;
      return;
    }
    if (f) clearTimeout(f.timer);
    // A replica that left takes its previous reading with it; one that stays keeps it.
    const next: Followed = { ...f, trend: f?.trend ?? emptyTrend(), endpoints: sorted, wake };
    this.followed.set(key, next);
    this.schedule(key, next, 0);
  }

  unfollow(key: string): void {
    clearTimeout(this.followed.get(key)?.timer);
    this.followed.delete(key);
  }

  /** The latest reading for `key`: undefined when none was read or no replica reported. */
  latest(key: string): ReplicaReading | undefined {
    const f = this.followed.get(key);
    return f && readingOf(f.trend);
  }

  stop(): void {
    for (const f of this.followed.values()) clearTimeout(f.timer);
    this.followed.clear();
  }

  private schedule(key: string, f: Followed, delay: number): void {
    f.timer = setTimeout(async () => {
      try {
        const read = await this.read(f.endpoints);
        if (this.followed.get(key) !== f) return;
        f.trend = advanceTrend(f.trend, read, f.endpoints, this.now());
        const verdict = verdictOf(readingOf(f.trend));
        const changed = verdict !== f.verdict;
        f.verdict = verdict;
        if (changed) f.wake();
      } catch (err) {
        log.warn({ err: String(err), key }, 'reading replica reports failed');
      }
      if (this.followed.get(key) === f) this.schedule(key, f, this.pollMs);
    }, delay);
    f.timer.unref();
  }
}
