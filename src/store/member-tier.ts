// What a member's `kvpool-store` reports of its disk tier on GET /tier (decision 39), and the
// operator's read of it. A figure the member did not report stays absent.
import type { Reading } from './observe.ts';

export interface TierReport {
  /** The tier directory (MOONCAKE_OFFLOAD_FILE_STORAGE_PATH). */
  path: string;
  /** statfs of the directory: the filesystem's size and what the store's user may still write. */
  filesystem?: { totalBytes: number; availableBytes: number };
  /** Why statfs failed, when it did. */
  filesystemError?: string;
  /** FILE_WRITE_FAIL lines the member service logged since it started. */
  writeFailures: number;
  lastWriteFailure?: { at: string; line: string };
}

/** How long a member has to answer; the reads of a backend's members run side by side. */
export const memberTierTimeoutMs = 2000;

const count = (v: unknown) => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;

/** The report in a /tier body; an error naming the field when it is not one. */
export function parseTierReport(body: string): TierReport {
  const r = JSON.parse(body) as Record<string, unknown>;
  if (typeof r.path !== 'string') throw new Error('the /tier reply has no path');
  if (!count(r.writeFailures)) throw new Error('the /tier reply has no writeFailures count');
  const fs = r.filesystem as Record<string, unknown> | undefined;
  if (fs !== undefined && !(count(fs.totalBytes) && count(fs.availableBytes)))
    throw new Error('the /tier reply’s filesystem lacks totalBytes or availableBytes');
  const last = r.lastWriteFailure as Record<string, unknown> | undefined;
  if (last !== undefined && !(typeof last.at === 'string' && typeof last.line === 'string'))
    throw new Error('the /tier reply’s lastWriteFailure lacks at or line');
  return {
    path: r.path,
    writeFailures: r.writeFailures as number,
    ...(fs
      ? { filesystem: { totalBytes: fs.totalBytes as number, availableBytes: fs.availableBytes as number } }
      : {}),
    ...(typeof r.filesystemError === 'string' ? { filesystemError: r.filesystemError } : {}),
    ...(last ? { lastWriteFailure: { at: last.at as string, line: last.line as string } } : {}),
  };
}

/** One read of a member's /tier at host:port. */
export async function readMemberTier(
  address: string,
  timeoutMs = memberTierTimeoutMs,
): Promise<Reading<TierReport>> {
  try {
    const res = await fetch(`http://${address}/tier`, {
      signal: AbortSignal.timeout(timeoutMs),
      redirect: 'error',
    });
    const body = await res.text();
    if (res.status !== 200) throw new Error(`HTTP ${res.status}`);
    return { ok: true, value: parseTierReport(body) };
  } catch (err) {
    const why =
      err instanceof Error ? (err.cause instanceof Error ? err.cause.message : err.message) : String(err);
    return { ok: false, reason: 'TierReadFailed', message: `GET http://${address}/tier: ${why}` };
  }
}
