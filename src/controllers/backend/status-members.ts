// The member rows and the MembersMounted and PoolWrites verdicts of a backend's status: segments joined
// to member Pods by address. Pure.

import { BackendCondition, BackendReason, backendConditions } from '../../api/kvcache-backend-conditions.ts';
import { ordinal } from '../../kube/ordinal.ts';
import type { Segment } from '../../store/observe.ts';
import { gauge } from '../../store/prometheus.ts';
import { type DecidedCondition, deciderOf, nameList } from '../../vocabulary/conditions.ts';
import type { PodView } from './pod-view.ts';
import type { BackendView, LeaderVerdict, MemberRow } from './status-view.ts';

const cond = deciderOf(backendConditions);

/** The host part of `host:port` (IPv6 `[::1]:port` aware). */
export function endpointHost(endpoint: string | undefined): string | undefined {
  if (!endpoint) return undefined;
  const m = /^\[([^\]]+)\]:\d+$/.exec(endpoint) ?? /^(.*):\d+$/.exec(endpoint);
  return m ? m[1] : endpoint;
}

function memberRows(segments: Segment[], v: BackendView): { rows: MemberRow[]; ambiguous: string[] } {
  const byIp = new Map<string, (PodView & { group: number })[]>();
  for (const p of v.memberPods) if (p.podIP) byIp.set(p.podIP, [...(byIp.get(p.podIP) ?? []), p]);
  const ambiguous: string[] = [];
  const rows = segments.map((s) => {
    const matches = byIp.get(endpointHost(s.teEndpoint) ?? '') ?? [];
    if (matches.length > 1) ambiguous.push(`${s.teEndpoint}: ${matches.map((p) => p.name).join(', ')}`);
    const pod = matches.length === 1 ? matches[0] : undefined;
    return {
      segmentID: s.segmentId,
      ...(s.clientId ? { clientID: s.clientId } : {}),
      ...(s.segmentName ? { segmentName: s.segmentName } : {}),
      ...(pod?.nodeName ? { nodeName: pod.nodeName } : {}),
      ...(pod ? { medium: v.groupMedium[pod.group] } : {}),
      ...(s.protocol ? { protocol: s.protocol } : {}),
      ...(s.status ? { state: s.status } : {}),
    };
  });
  rows.sort((a, b) => ordinal(a.segmentName ?? '', b.segmentName ?? '') || ordinal(a.segmentID, b.segmentID));
  return { rows, ambiguous };
}

export function membersVerdict(
  v: BackendView,
  leader: LeaderVerdict,
): { condition: DecidedCondition; rows?: MemberRow[] } {
  if (!leader.serving) {
    const c = leader.condition;
    return {
      condition: cond(BackendCondition.MembersMounted, 'False', c.reason, c.message),
      rows: v.previousMembers,
    };
  }
  const listing = v.store!.segments;
  if (!listing?.ok) {
    const reason = listing?.reason ?? BackendReason.ListingFailed;
    return {
      condition: cond(
        BackendCondition.MembersMounted,
        'False',
        reason,
        listing?.message ?? 'no listing read',
      ),
      rows: v.previousMembers,
    };
  }
  if (!listing.value.served) {
    return {
      condition: cond(
        BackendCondition.MembersMounted,
        'Unknown',
        BackendReason.SegmentListingNotServed,
        'the master serves no /get_segments_detail (Mooncake before 0.3.12)',
      ),
      rows: [],
    };
  }
  const segments = listing.value.segments;
  const { rows, ambiguous } = memberRows(segments, v);
  return { condition: mountedCondition(v, segments, ambiguous), rows };
}

/** MembersMounted once the leader lists its segments: each member Pod told apart, ready and mounted. */
function mountedCondition(v: BackendView, segments: Segment[], ambiguous: string[]): DecidedCondition {
  if (ambiguous.length)
    return cond(
      BackendCondition.MembersMounted,
      'False',
      BackendReason.AmbiguousMemberIdentity,
      `several member Pods share one address: ${nameList(ambiguous)}`,
    );
  const stuck = v.memberPods.filter((p) => !p.ready && !p.deleting && p.fault);
  if (stuck.length) {
    const first = stuck[0]!;
    const names = nameList(stuck.map((p) => `${p.name}${p.nodeName ? ` on ${p.nodeName}` : ''}`));
    return cond(
      BackendCondition.MembersMounted,
      'False',
      first.fault!.reason,
      `member Pod ${names}: ${first.fault!.message}`,
    );
  }
  if (segments.length === 0)
    return v.placementGaps?.length
      ? cond(
          BackendCondition.MembersMounted,
          'False',
          BackendReason.Unschedulable,
          `the leader lists no mounted segment: ${v.placementGaps.join('; ')}`,
        )
      : cond(
          BackendCondition.MembersMounted,
          'False',
          BackendReason.NoSegments,
          'the leader lists no mounted segment',
        );
  const listed = new Set(segments.map((s) => endpointHost(s.teEndpoint)));
  const missing = v.memberPods.filter((p) => p.ready && !p.deleting && p.podIP && !listed.has(p.podIP));
  if (missing.length) {
    const names = nameList(missing.map((p) => `${p.name}${p.nodeName ? ` on ${p.nodeName}` : ''}`));
    return cond(
      BackendCondition.MembersMounted,
      'False',
      BackendReason.SegmentsShort,
      `ready member Pods without a segment on the leader: ${names}`,
    );
  }
  return cond(
    BackendCondition.MembersMounted,
    'True',
    BackendReason.Mounted,
    `leader lists ${segments.length} segment(s)`,
  );
}

export function poolWritesVerdict(v: BackendView, leader: LeaderVerdict): DecidedCondition {
  const m = leader.serving ? v.store!.metrics : undefined;
  const listing = leader.serving ? v.store!.segments : undefined;
  if (!m?.ok || !listing?.ok || !listing.value.served) {
    return cond(
      BackendCondition.PoolWrites,
      'Unknown',
      BackendReason.NoObservation,
      'the leader’s counters or segment listing could not be read',
    );
  }
  const putEnd = gauge(m.value, 'master_put_end_requests_total') ?? 0;
  const putStart = gauge(m.value, 'master_put_start_requests_total') ?? 0;
  const putRevoke = gauge(m.value, 'master_put_revoke_requests_total') ?? 0;
  const anyUsed = listing.value.segments.some((s) => (s.usedBytes ?? 0) > 0);
  if (putEnd > 0 || anyUsed)
    return cond(
      BackendCondition.PoolWrites,
      'True',
      BackendReason.WritesLanded,
      'writes have completed on this leader',
    );
  if (putStart > 0 && putRevoke > 0) {
    return cond(
      BackendCondition.PoolWrites,
      'False',
      BackendReason.WritesRevoked,
      `${putStart} write(s) started and were revoked, and no member holds data`,
    );
  }
  if (putStart > 0)
    return cond(
      BackendCondition.PoolWrites,
      'Unknown',
      BackendReason.WritesUnfinished,
      'writes have started but none has completed yet',
    );
  return cond(
    BackendCondition.PoolWrites,
    'Unknown',
    BackendReason.NoWrites,
    'no write has started since the leader started',
  );
}
