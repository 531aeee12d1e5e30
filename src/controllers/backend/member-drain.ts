// Before a rollout recreates a member, its segment is drained (decision 50): the master moves the
// objects it holds to the other members' segments (its drain jobs, POST /api/v1/drain_jobs), so the
// member's new process starts empty and no key is lost. An object read or written within the master's
// object lease cannot move until the lease ends, so a drain can take that long.

import { StoreAdminClient } from '../../store/admin-client.ts';
import type { Segment } from '../../store/observe.ts';

/** How long a drain may run before the member is recreated anyway (what is left is then lost, and said). */
export const drainDeadlineMs = 10 * 60_000;

export type DrainVerdict =
  | { done: true; message: string; unmoved?: number }
  | { done: false; message: string };

interface Job {
  id: string;
  startedAt: number;
}

interface JobReading {
  status_name?: string;
  succeeded_units?: number;
  failed_units?: number;
  blocked_units?: number;
  active_units?: number;
  migrated_bytes?: number;
  message?: string;
}

function parsed<T>(body: string): Partial<T> {
  try {
    return JSON.parse(body) as Partial<T>;
  } catch {
    return {};
  }
}

const ended = (status: string | undefined) => ['SUCCEEDED', 'FAILED', 'CANCELED'].includes(status ?? '');

/** The segments a member Pod mounted, by the address its transfer endpoint names. */
export function segmentsOf(podIP: string, segments: Segment[]): Segment[] {
  return segments.filter((s) => (s.teEndpoint ?? s.segmentName ?? '').replace(/:\d+$/, '') === podIP);
}

export class MemberDrains {
  private readonly jobs = new Map<string, Job>();

  /**
   * Drains the named segments through the master at `admin`: done when their job ended, or past the
   * deadline; otherwise what the job has moved so far. A member that has mounted (`mounted`: its Pod
   * is ready) but that the master does not list yet is waited for: unknown is not empty.
   */
  async drain(
    admin: string,
    pod: string,
    segments: Segment[],
    mounted: boolean,
    now = Date.now(),
  ): Promise<DrainVerdict> {
    // Every segment it mounted is drained: a master just promoted can list a segment's use as 0 before
    // its members have remounted, so a used figure of 0 is not taken for empty; the job finds out.
    const held = segments.filter((s) => s.segmentName);
    if (held.length === 0)
      return mounted
        ? {
            done: false,
            message: `waiting for the master to list the segment of ${pod}, which has mounted one`,
          }
        : { done: true, message: `${pod} has mounted no segment` };
    const client = new StoreAdminClient(admin);
    const key = held.map((s) => s.segmentName!).join(',');
    let job = this.jobs.get(key);
    if (!job) {
      const body = { segments: held.map((s) => s.segmentName), target_segments: [], max_concurrency: 64 };
      const res = await client.call('POST', '/api/v1/drain_jobs', body);
      const created = parsed<{ job_id?: string; error_message?: string }>(res.body);
      if (res.status !== 200 || !created.job_id)
        return {
          done: false,
          message:
            `asking the master to drain ${pod}: HTTP ${res.status} ${created.error_message ?? ''}`.trim(),
        };
      job = { id: created.job_id, startedAt: now };
      this.jobs.set(key, job);
    }
    const res = await client.call('GET', `/api/v1/drain_jobs/query?job_id=${encodeURIComponent(job.id)}`);
    if (res.status !== 200) {
      // Another master serves now (a job lives in the master that ran it): the next pass asks again.
      this.jobs.delete(key);
      return {
        done: false,
        message: `the drain of ${pod} is unknown to the master (HTTP ${res.status}); asking again`,
      };
    }
    const r = parsed<JobReading>(res.body);
    const moved = `${r.succeeded_units ?? 0} objects moved (${r.migrated_bytes ?? 0} bytes)`;
    if (ended(r.status_name)) {
      this.jobs.delete(key);
      const unmoved = (r.failed_units ?? 0) + (r.blocked_units ?? 0);
      return {
        done: true,
        message: `drained ${pod}: ${r.status_name}, ${moved}`,
        ...(unmoved ? { unmoved } : {}),
      };
    }
    if (now - job.startedAt > drainDeadlineMs) {
      this.jobs.delete(key);
      const unmoved = (r.blocked_units ?? 0) + (r.active_units ?? 0) + (r.failed_units ?? 0);
      return {
        done: true,
        message: `stopped waiting for the drain of ${pod} after 10 minutes: ${moved}`,
        unmoved,
      };
    }
    const blocked = r.blocked_units ? `, ${r.blocked_units} waiting for their object lease to end` : '';
    return { done: false, message: `draining ${pod} before it is recreated: ${moved}${blocked}` };
  }
}
