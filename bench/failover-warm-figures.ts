// The warm-failover bench's derivations, kept pure: which keys a tier file holds, and a run's figures
// from the reads its clients saw after the kill. A figure that was not observed is null, never 0.
import { median } from './results.ts';

/** The key of object `i` under `prefix`: fixed width, so no key is the start of another. */
export function objectKey(prefix: string, i: number): string {
  return `${prefix}-${String(i).padStart(4, '0')}`;
}

/**
 * The keys under `prefix` that a tier file's bytes name. A bucket file holds each key beside its value
 * (and the bench's values start with their key), so a key named there is on the disk.
 */
export function keysInTierFile(bytes: Buffer, prefix: string): Set<string> {
  const escaped = prefix.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const found = new Set<string>();
  for (const m of bytes.toString('latin1').matchAll(new RegExp(`${escaped}-\\d{4}`, 'g'))) found.add(m[0]);
  return found;
}

import type { Hit } from '../test/support/warm-client.ts';

export type { Hit };

export interface WarmRunFigures {
  written: number;
  tierResident: number;
  residentHit: number;
  /** residentHit / tierResident; null when nothing was on the tier. */
  fraction: number | null;
  firstHitMs: number | null;
  /** Until the last tier-resident key read back; null unless every one did. */
  allHitMs: number | null;
  /** Reads that returned bytes other than the key's: must be 0. */
  wrongBytes: number;
  /** Keys that were not seen on the tier before the kill and still read back (a bucket written after the look). */
  otherHits: number;
}

/** A run's figures from every hit its clients reported (a key read by two clients counts once, at its first). */
export function warmRunFigures(
  killedAt: number,
  written: string[],
  resident: Set<string>,
  hits: Hit[],
): WarmRunFigures {
  const first = new Map<string, number>();
  for (const h of hits)
    if (h.ok && h.at < (first.get(h.key) ?? Number.POSITIVE_INFINITY)) first.set(h.key, h.at);
  const residentTimes = [...first].filter(([k]) => resident.has(k)).map(([, at]) => at - killedAt);
  const all = resident.size > 0 && residentTimes.length === resident.size;
  return {
    written: written.length,
    tierResident: resident.size,
    residentHit: residentTimes.length,
    fraction: resident.size > 0 ? residentTimes.length / resident.size : null,
    firstHitMs: residentTimes.length ? Math.min(...residentTimes) : null,
    allHitMs: all ? Math.max(...residentTimes) : null,
    wrongBytes: new Set(hits.filter((h) => !h.ok).map((h) => h.key)).size,
    otherHits: [...first.keys()].filter((k) => !resident.has(k) && written.includes(k)).length,
  };
}

/** The median of a figure over runs, a run without it counting as longer than any: null if that is the median. */
export function medianOrNull(values: (number | null)[]): number | null {
  if (values.length === 0) return null;
  const m = median(values.map((v) => v ?? Number.POSITIVE_INFINITY));
  return Number.isFinite(m) ? m : null;
}

/** The median of a fraction over the runs that had one (a run with nothing on the tier has none). */
export function medianFraction(values: (number | null)[]): number | null {
  const present = values.filter((v): v is number => v !== null);
  return present.length ? median(present) : null;
}

export const warmTargets = { tierResidentHitFraction: 0.9, killToAllHitMs: 15_000 };

/** The medians over runs, the cold backend's worst run, and whether the targets were met. */
export function summarizeWarmRuns(
  runs: {
    warm: WarmRunFigures & { killToFirstRegisteredMs?: number | null; killToAllRegisteredMs?: number | null };
    cold: { fraction: number };
  }[],
) {
  const fraction = medianFraction(runs.map((r) => r.warm.fraction));
  const allHit = medianOrNull(runs.map((r) => r.warm.allHitMs));
  return {
    runs: runs.length,
    tierResidentHitFraction: fraction,
    killToFirstHitMs: medianOrNull(runs.map((r) => r.warm.firstHitMs)),
    killToAllHitMs: allHit,
    /** The store's view: the new master's tier bytes back to what the old one had registered. */
    killToFirstRegisteredMs: medianOrNull(runs.map((r) => r.warm.killToFirstRegisteredMs ?? null)),
    killToAllRegisteredMs: medianOrNull(runs.map((r) => r.warm.killToAllRegisteredMs ?? null)),
    tierResidentOfWritten: medianFraction(
      runs.map((r) => (r.warm.written ? r.warm.tierResident / r.warm.written : null)),
    ),
    wrongBytes: runs.reduce((n, r) => n + r.warm.wrongBytes, 0),
    coldHitFractionMax: runs.length ? Math.max(...runs.map((r) => r.cold.fraction)) : null,
    met: {
      fraction: fraction !== null && fraction >= warmTargets.tierResidentHitFraction,
      warmWithin: allHit !== null && allHit <= warmTargets.killToAllHitMs,
    },
  };
}
