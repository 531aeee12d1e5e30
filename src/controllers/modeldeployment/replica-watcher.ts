// Reads what each deployment's ready replicas report about the cache, on its own schedule, and wakes
// the deployment's pass when the verdict those reports give changes. A pass reads the latest reading
// and never waits on a replica (one that hangs would otherwise hold every pass of its deployment).
import { log } from '../../kube/log.ts';
import { readReplicaReports } from './replica-reports.ts';
import type { CacheReports } from './status.ts';

type Read = (endpoints: string[]) => Promise<CacheReports | undefined>;

interface Followed {
  endpoints: string[];
  wake: () => void;
  latest?: CacheReports;
  /** What CacheAttached is decided from: reported at all, any success, any failure. */
  verdict?: string;
  timer?: NodeJS.Timeout;
}

const verdictOf = (r: CacheReports | undefined) => (r ? `${r.successes > 0}:${r.failures > 0}` : 'none');

export class ReplicaReportWatcher {
  private readonly followed = new Map<string, Followed>();
  private readonly pollMs: number;
  private readonly read: Read;

  constructor(pollMs = 5000, read: Read = readReplicaReports) {
    this.pollMs = pollMs;
    this.read = read;
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
    const next: Followed = { ...f, endpoints: sorted, wake };
    this.followed.set(key, next);
    this.schedule(key, next, 0);
  }

  unfollow(key: string): void {
    clearTimeout(this.followed.get(key)?.timer);
    this.followed.delete(key);
  }

  /** The latest reading for `key`: undefined when none was read or no replica reported. */
  latest(key: string): CacheReports | undefined {
    return this.followed.get(key)?.latest;
  }

  stop(): void {
    for (const f of this.followed.values()) clearTimeout(f.timer);
    this.followed.clear();
  }

  private schedule(key: string, f: Followed, delay: number): void {
    f.timer = setTimeout(async () => {
      try {
        const reading = await this.read(f.endpoints);
        if (this.followed.get(key) !== f) return;
        f.latest = reading;
        const verdict = verdictOf(reading);
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
