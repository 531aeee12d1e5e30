// status.lastFailover: when a new master took over, the objects in memory before and after (decision
// 50), and what the members re-registered from their disk tiers (decision 45). A new master starts empty, so the tier figures it reports are the members'
// re-registrations; they are followed until they reach what the previous master last reported, and then
// kept. Figures that stop short are taken as warm once they held (a member may have gone with the master)
// and still followed, so a member that comes back late corrects them. Pure: the reconciler holds the
// memory between passes.
import type { LastFailover } from '../../api/kvcache-backend.ts';
import { anotherMaster, type MasterSighting } from '../../store/master-sighting.ts';
import { formatBinarySI, parseQuantityBytes } from '../../vocabulary/quantity.ts';

/**
 * How long the figures must hold before a re-registration that has not reached the previous master's is
 * taken as done: longer than the ~30 s a member's master client can stall before it remounts on the new
 * master (docs/failover-and-sizing.md), which a shorter hold took for the end of the re-registration.
 */
export const warmSettleMs = 45_000;

/** What is kept between passes: the last master read, when its tier figures last moved, the record decided. */
export interface FailoverMemory {
  last?: MasterSighting;
  movedAt?: number;
  /**
   * The record the last pass decided. A pass reads the backend from the informer, which can lag the
   * status write that carried the record; without this, that pass decided "no record" and erased it.
   */
  record?: LastFailover;
}

export interface FailoverOptions {
  /** The backend may have a disk tier (one is declared, or the store is external): its figures are followed. */
  tier: boolean;
  settleMs?: number;
}

export const instant = (ms: number) => new Date(ms).toISOString();

/** How long after a master change the new master's memory figures are followed, then kept. */
export const dramFollowMs = 15_000;

function startRecord(before: MasterSighting, now: MasterSighting, tier: boolean): LastFailover {
  const b = tier ? before.tier : {};
  const d = before.dram;
  return {
    at: instant(now.at),
    master: now.address,
    ...(b.objects !== undefined ? { tierObjectsBefore: b.objects } : {}),
    ...(b.bytes !== undefined ? { tierBytesBefore: formatBinarySI(b.bytes) } : {}),
    ...(d.objects !== undefined ? { dramKeysBefore: d.objects } : {}),
    ...(d.bytes !== undefined ? { dramBytesBefore: formatBinarySI(d.bytes) } : {}),
  };
}

/** The new master's memory figures, while within dramFollowMs of the change (a promoted standby settles). */
function followDram(r: LastFailover, now: MasterSighting): LastFailover {
  if (r.master !== now.address || now.at - Date.parse(r.at) > dramFollowMs) return r;
  const { objects, bytes } = now.dram;
  const keys = objects ?? r.dramKeysAfter;
  const held = bytes !== undefined ? formatBinarySI(bytes) : r.dramBytesAfter;
  // Unchanged figures keep the record as it is: an idle pass writes nothing.
  if (keys === r.dramKeysAfter && held === r.dramBytesAfter) return r;
  return {
    ...r,
    ...(keys !== undefined ? { dramKeysAfter: keys } : {}),
    ...(held !== undefined ? { dramBytesAfter: held } : {}),
  };
}

/** Whether the figures came back to the previous master's: every object and byte it had on the tier. */
function reached(r: LastFailover): boolean {
  if (r.tierObjectsBefore === undefined || r.tierBytesBefore === undefined) return false;
  if (r.reRegisteredObjects === undefined || r.reRegisteredBytes === undefined) return false;
  return (
    r.reRegisteredObjects >= r.tierObjectsBefore &&
    parseQuantityBytes(r.reRegisteredBytes) >= parseQuantityBytes(r.tierBytesBefore)
  );
}

/** The open record with the new master's figures; warm once they reached the old ones or held for `settleMs`. */
function follow(r: LastFailover, now: MasterSighting, movedAt: number, settleMs: number) {
  const { objects, bytes } = now.tier;
  const next: LastFailover = {
    ...r,
    ...(objects !== undefined ? { reRegisteredObjects: objects } : {}),
    ...(bytes !== undefined ? { reRegisteredBytes: formatBinarySI(bytes) } : {}),
  };
  const moved =
    next.reRegisteredObjects !== r.reRegisteredObjects || next.reRegisteredBytes !== r.reRegisteredBytes;
  const since = moved ? now.at : movedAt;
  if (reached(next) || now.at - since >= settleMs) next.warmAt = instant(since);
  return { record: next, movedAt: since };
}

/**
 * The record after one more reading of the backend's master (`now`, undefined when it was not read
 * serving): a new record when it is another master than the one last read, the open record followed
 * while it is the same master, anything else kept as it is.
 */
export function advanceFailover(
  record: LastFailover | undefined,
  memory: FailoverMemory,
  now: MasterSighting | undefined,
  options: FailoverOptions,
): { record?: LastFailover; memory: FailoverMemory } {
  const known = memory.record && (!record || memory.record.at >= record.at) ? memory.record : record;
  if (!now) return { record: known, memory };
  let next = known;
  let movedAt = memory.movedAt ?? now.at;
  if (memory.last && anotherMaster(memory.last, now)) {
    next = startRecord(memory.last, now, options.tier);
    movedAt = now.at;
  }
  if (next) next = followDram(next, now);
  if (next && !(next.warmAt && reached(next)) && next.master === now.address && options.tier) {
    const followed = follow(next, now, movedAt, options.settleMs ?? warmSettleMs);
    next = followed.record;
    movedAt = followed.movedAt;
  }
  return { record: next, memory: { last: now, movedAt, ...(next ? { record: next } : {}) } };
}

/** Seconds from the new master to warm, with milliseconds; undefined while not warm. */
export function warmSeconds(r: LastFailover | undefined): number | undefined {
  if (!r?.warmAt) return undefined;
  return (Date.parse(r.warmAt) - Date.parse(r.at)) / 1000;
}
