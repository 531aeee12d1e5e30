// TierWritable (decision 39): whether the members' disk tiers take the store's writes. The master does
// not say: a write that fails on a full filesystem is logged by the member (FILE_WRITE_FAIL) and its
// objects stay in memory only, while the master goes on reporting the declared file capacity. Each
// tier member's `kvpool-store` counts those lines and reads its filesystem (GET /tier); this decides
// from those reports. Pure.
import { BackendCondition, BackendReason, backendConditions } from '../../api/kvcache-backend-conditions.ts';
import { formatQuantity } from '../../kube/readable-quantity.ts';
import type { TierReport } from '../../store/member-tier.ts';
import type { Reading } from '../../store/observe.ts';
import { type DecidedCondition, deciderOf, nameList } from '../../vocabulary/conditions.ts';
import { bucketSizeLimitBytes } from './render-tier.ts';

const decided = deciderOf(backendConditions);

/**
 * The room the store keeps free on a tier's filesystem beyond each bucket it writes (decision 39,
 * measured: it evicts its own buckets while `available < required + 256 MiB`, and fails the write when
 * none is left to evict and the bucket does not fit).
 */
export const storeReserveBytes = 256 * 1024 * 1024;
/** Below this the store evicts from the tier on every write, or fails the write. */
export const tierRoomBytes = bucketSizeLimitBytes + storeReserveBytes;

/** A FILE_WRITE_FAIL this recent counts as the tier failing now; older ones are history. */
export const writeFailureWindowMs = 10 * 60_000;

/** One tier member's report, read this pass. */
export interface MemberTierReading {
  pod: string;
  node: string;
  /** The member group's index, for the field the fix names. */
  group: number;
  reading: Reading<TierReport>;
}

function room(r: TierReport): string {
  const fs = r.filesystem;
  return fs
    ? `${formatQuantity(fs.availableBytes)} free of ${formatQuantity(fs.totalBytes)} at ${r.path}`
    : `free space at ${r.path} unknown: ${r.filesystemError ?? 'not reported'}`;
}

const field = (group: number) => `spec.connection.managed.members[${group}].localDisks[0]`;

function fixFor(groups: number[]): string {
  const fields = nameList([...new Set(groups)].sort((a, b) => a - b).map((g) => `${field(g)}.capacity`));
  return (
    'Make room on those nodes: a bigger filesystem under the tier, or no other files on it; or lower ' +
    `${fields} to what the filesystem can hold, so the store evicts its own buckets before the disk is full; ` +
    'or write fewer objects'
  );
}

/** The condition, or undefined while no tier member runs. */
export function decideTierWritable(readings: MemberTierReading[], now: Date): DecidedCondition | undefined {
  if (!readings.length) return undefined;
  const answered = readings.flatMap((m) => (m.reading.ok ? [{ ...m, report: m.reading.value }] : []));
  const since = now.getTime() - writeFailureWindowMs;
  const failing = answered.filter((m) => {
    const at = Date.parse(m.report.lastWriteFailure?.at ?? '');
    return m.report.writeFailures > 0 && Number.isFinite(at) && at >= since;
  });
  if (failing.length)
    return decided(
      BackendCondition.TierWritable,
      'False',
      BackendReason.WriteFailed,
      `the store could not write its disk tier on ${nameList(
        failing.map(
          (m) =>
            `${m.node} (${m.report.writeFailures} FILE_WRITE_FAIL lines, the last at ${m.report.lastWriteFailure!.at}: ${m.report.lastWriteFailure!.line}; ${room(m.report)})`,
        ),
      )}. Objects the store meant for the tier there stay in memory only and a failover loses them. ${fixFor(failing.map((m) => m.group))}`,
    );
  const full = answered.filter(
    (m) => m.report.filesystem !== undefined && m.report.filesystem.availableBytes < tierRoomBytes,
  );
  if (full.length)
    return decided(
      BackendCondition.TierWritable,
      'False',
      BackendReason.NoRoom,
      `the tier's filesystem has less room than one bucket (${formatQuantity(bucketSizeLimitBytes)}) and the ${formatQuantity(storeReserveBytes)} the store keeps free on ${nameList(
        full.map((m) => `${m.node} (${room(m.report)})`),
      )}: the store evicts its own buckets from the tier to make room for each new one, and fails the write when none is left. ${fixFor(full.map((m) => m.group))}`,
    );
  const silent = readings.filter((m) => !m.reading.ok);
  if (silent.length)
    return decided(
      BackendCondition.TierWritable,
      'Unknown',
      BackendReason.NotObserved,
      `no tier status from ${nameList(
        silent.map((m) => `${m.pod} on ${m.node}: ${m.reading.ok ? '' : m.reading.message}`),
      )}; ${answered.length} of ${readings.length} members answered without a failed write`,
    );
  const least = answered
    .filter((m) => m.report.filesystem)
    .sort((a, b) => a.report.filesystem!.availableBytes - b.report.filesystem!.availableBytes)[0];
  return decided(
    BackendCondition.TierWritable,
    'True',
    BackendReason.Writable,
    `no member logged a failed tier write in the last ${writeFailureWindowMs / 60_000} minutes (${readings.length} members)${
      least ? `; least room on ${least.node}: ${room(least.report)}` : ''
    }`,
  );
}
