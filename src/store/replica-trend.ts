// What the replicas' counters did between successive readings. The engines' counters are cumulative,
// so a replica that worked and then started failing (its tenant removed from the ledger, the master
// unreachable) still shows its old successes: the verdict is taken from the change since the previous
// reading of each replica, and the first reading of a replica counts its totals. Pure.
import { apiTime } from '../kube/time.ts';
import { type CacheReports, reportedAnything, reportFields, sumReports } from './replica-reports.ts';

/** What the readings that moved a counter last showed. */
export type Recent =
  /** Keys or tokens were stored or loaded. */
  | 'active'
  /** Keys failed and none was stored or loaded, in every reading since the last success. */
  | 'failing'
  /** Nothing moved since the replicas were first read. */
  | 'quiet';

/** What a deployment's pass reads: the replicas' totals, and what their counters did lately. */
export interface ReplicaReading {
  /** The latest reading of each followed replica, summed. */
  totals: CacheReports;
  recent: Recent;
  /** While failing: keys failed since the last reading with a success (or since the first reading). */
  failedKeys?: number;
  /** When a reading last showed a success (RFC 3339); absent when none ever did. */
  lastSuccessAt?: string;
}

export interface Trend {
  /** The latest reading of each followed endpoint. */
  last: Map<string, CacheReports>;
  recent?: Recent;
  failedKeys: number;
  lastSuccessAt?: string;
}

export const emptyTrend = (): Trend => ({ last: new Map(), failedKeys: 0 });

/** One counter's growth since the previous reading; a counter that went down restarted from 0. */
function growth(now: number | undefined, before: number | undefined): number {
  if (now === undefined) return 0;
  if (before === undefined || now < before) return now;
  return now - before;
}

/** What moved between two readings of one replica. */
export function changeOf(now: CacheReports, before: CacheReports | undefined): CacheReports {
  const out: CacheReports = {};
  for (const k of reportFields) {
    const g = growth(now[k], before?.[k]);
    if (g) out[k] = g;
  }
  return out;
}

const successes = (r: CacheReports) =>
  (r.storedKeys ?? 0) + (r.loadedKeys ?? 0) + (r.storedTokens ?? 0) + (r.loadedTokens ?? 0);

/**
 * The trend after one round of readings: `read` holds the replicas that answered (a replica that
 * reports nothing answers {}), `followed` every replica still followed; one that did not answer keeps
 * its previous reading.
 */
export function advanceTrend(
  t: Trend,
  read: Map<string, CacheReports>,
  followed: string[],
  now: Date,
): Trend {
  const last = new Map<string, CacheReports>();
  const moved: CacheReports[] = [];
  for (const e of followed) {
    const r = read.get(e);
    if (!r) {
      if (t.last.has(e)) last.set(e, t.last.get(e)!);
      continue;
    }
    moved.push(changeOf(r, t.last.get(e)));
    last.set(e, r);
  }
  const change = sumReports(moved);
  const next: Trend = { ...t, last };
  if (successes(change) > 0) {
    next.recent = 'active';
    next.failedKeys = 0;
    next.lastSuccessAt = apiTime(now);
  } else if ((change.failedKeys ?? 0) > 0) {
    next.recent = 'failing';
    next.failedKeys = (t.recent === 'failing' ? t.failedKeys : 0) + change.failedKeys!;
  } else if (!t.recent && reportedAnything(sumReports(last.values()))) next.recent = 'quiet';
  return next;
}

/** What a pass reads of a trend; undefined while no followed replica reported anything. */
export function readingOf(t: Trend): ReplicaReading | undefined {
  const totals = sumReports(t.last.values());
  if (!reportedAnything(totals) || !t.recent) return undefined;
  return {
    totals,
    recent: t.recent,
    ...(t.recent === 'failing' ? { failedKeys: t.failedKeys } : {}),
    ...(t.lastSuccessAt ? { lastSuccessAt: t.lastSuccessAt } : {}),
  };
}
