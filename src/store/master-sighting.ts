// What one reading of a master says about which master it is, what its memory and its disk tier hold:
// the figures a failover is measured by (decisions 45 and 50). A figure the master did not report stays
// absent, never zero. Pure.
import type { StoreObservation } from './observe.ts';
import { type Families, gauge, gaugeBytes } from './prometheus.ts';

/** The master's disk-tier figures: objects with a tier replica and their bytes. */
export interface TierFigures {
  /** file_cache_nums_: objects with a replica on a member's disk tier (LOCAL_DISK). */
  objects?: number;
  /** master_allocated_file_size_bytes: the bytes of those replicas. */
  bytes?: bigint;
}

/** The master's memory figures: the objects it indexes and the bytes allocated in memory segments. */
export interface DramFigures {
  /**
   * master_key_count: the objects the master indexes (with a disk tier, those only on the tier count
   * too). Not mem_cache_nums_, which counts the puts this master served and starts at 0 on a standby
   * promoted with the whole index.
   */
  objects?: number;
  /** master_allocated_bytes: bytes allocated in the memory segments. */
  bytes?: bigint;
}

/** One reading of a serving master. */
export interface MasterSighting {
  address: string;
  /** When it was read (ms since the epoch). */
  at: number;
  /** Every request the master counted (its master_*_requests_total summed); a master that restarts starts again at 0. */
  requests?: number;
  tier: TierFigures;
  dram: DramFigures;
}

export const tierFamilies = {
  objects: 'file_cache_nums_',
  bytes: 'master_allocated_file_size_bytes',
} as const;

export const dramFamilies = {
  objects: 'master_key_count',
  bytes: 'master_allocated_bytes',
} as const;

const requestCounter = /^master_\w+_requests_total$/;

/** The sum of the master's request counters; undefined when it reports none. */
export function requestsServed(f: Families): number | undefined {
  let sum: number | undefined;
  for (const [name, samples] of f) {
    if (!requestCounter.test(name)) continue;
    for (const s of samples) if (Number.isFinite(s.value)) sum = (sum ?? 0) + s.value;
  }
  return sum;
}

function figuresOf(f: Families, families: { objects: string; bytes: string }) {
  const objects = gauge(f, families.objects);
  const bytes = gaugeBytes(f, families.bytes);
  return {
    ...(objects !== undefined && Number.isFinite(objects) ? { objects } : {}),
    ...(bytes !== undefined ? { bytes } : {}),
  };
}

export function tierFiguresOf(f: Families): TierFigures {
  return figuresOf(f, tierFamilies);
}

export function dramFiguresOf(f: Families): DramFigures {
  return figuresOf(f, dramFamilies);
}

/** The sighting of a master serving with its metrics read; undefined for any other reading. */
export function sightingOf(o: StoreObservation | undefined): MasterSighting | undefined {
  if (!o?.health.ok || !o.health.value.serviceReady || !o.metrics?.ok) return undefined;
  const requests = requestsServed(o.metrics.value);
  return {
    address: o.address,
    at: o.at,
    ...(requests !== undefined ? { requests } : {}),
    tier: tierFiguresOf(o.metrics.value),
    dram: dramFiguresOf(o.metrics.value),
  };
}

/**
 * Whether `now` is another master than `before`: another address, or request counters lower than
 * before (a restarted master counts from 0; only one that lived shorter than it went unread escapes).
 */
export function anotherMaster(before: MasterSighting, now: MasterSighting): boolean {
  if (before.address !== now.address) return true;
  return before.requests !== undefined && now.requests !== undefined && now.requests < before.requests;
}
