// The backend's conditions, phase, capacity and member rows, decided from what the store and the
// cluster report (KV-cache spec §2.1, §4.7, §5.4). Pure: the reconciler gathers a BackendView and
// writes what this returns.
import type { UsedByEntry } from '../../api/schema.ts';
import { capacityFrom, type Segment, type StoreObservation } from '../../store/observe.ts';
import { gauge } from '../../store/prometheus.ts';
import { type DecidedCondition, nameList } from '../conditions.ts';
import type { PodView } from './pod-view.ts';
import { formatBinarySI } from './quantity.ts';

export interface DeploymentView {
  desired: number;
  replicas: number;
  updated: number;
  ready: number;
  generation: number;
  observedGeneration: number;
}

export interface BackendView {
  managed: boolean;
  deleting: boolean;
  usedBy: UsedByEntry[];
  /** Why nothing could be rendered (an unresolvable image), if so. */
  renderProblem?: string;
  /** The admin endpoint read this pass; undefined when none is known (no ready leader). */
  adminAddress?: string;
  store?: StoreObservation;
  /** A disk tier is declared, or the store is external: capacity includes the file tier. */
  includeFiles: boolean;
  leaderPods: PodView[];
  /** Member Pods with the index of their group. */
  memberPods: (PodView & { group: number })[];
  groupMedium: string[];
  deployment?: DeploymentView | 'unreadable';
  /** Two-step raise of leader replicas in progress. */
  replicasPending?: boolean;
  election: boolean;
  lease?: { holder?: string } | 'unreadable';
  /** Rows of the previous status, kept when a listing fails. */
  previousMembers?: MemberRow[];
  /** Decided once from the first members' survey (disk tier only); undefined while undecided. */
  tierWasEmpty?: DecidedCondition;
}

export interface MemberRow {
  segmentID: string;
  clientID?: string;
  segmentName?: string;
  nodeName?: string;
  medium?: string;
  protocol?: string;
  state?: string;
}

export interface BackendStatusDecision {
  phase: 'Provisioning' | 'Ready' | 'Degraded' | 'Error' | 'Deleting';
  phaseMessage: string;
  conditions: DecidedCondition[];
  capacity?: { total: string; used: string };
  members?: MemberRow[];
}

const cond = (type: string, status: DecidedCondition['status'], reason: string, message: string) => ({
  type,
  status,
  reason,
  message,
});

interface LeaderVerdict {
  condition: DecidedCondition;
  serving: boolean;
  severity: 'ok' | 'starting' | 'error';
}

function leaderVerdict(v: BackendView): LeaderVerdict {
  const bad = (reason: string, message: string, severity: 'starting' | 'error'): LeaderVerdict => ({
    condition: cond('LeaderAvailable', 'False', reason, message),
    serving: false,
    severity,
  });
  const readyLeader = v.leaderPods.some((p) => p.ready);
  const fault = v.leaderPods.find((p) => p.fault)?.fault;
  if (!v.adminAddress || !v.store) {
    if (!v.managed) return bad('NoAdminEndpoint', 'the backend names no Admin endpoint to read', 'error');
    if (fault && !readyLeader) return bad(fault.reason, `leader Pod: ${fault.message}`, 'error');
    return bad(
      'LeaderStarting',
      'no leader Pod is ready yet; the election or the master is still starting',
      'starting',
    );
  }
  const h = v.store.health;
  if (!h.ok) {
    if (v.managed && !readyLeader) {
      if (fault) return bad(fault.reason, `leader Pod: ${fault.message}`, 'error');
      return bad('LeaderStarting', `the leader is starting: ${h.message}`, 'starting');
    }
    return bad('LeaderUnreachable', h.message, 'error');
  }
  if (!h.value.serviceReady) {
    return bad(
      'ServicePlaneNotActive',
      `the master at ${v.adminAddress} answers but reports service_ready: false`,
      'starting',
    );
  }
  return {
    condition: cond(
      'LeaderAvailable',
      'True',
      'Serving',
      `the master at ${v.adminAddress} reports service_ready`,
    ),
    serving: true,
    severity: 'ok',
  };
}

function capacityVerdict(
  v: BackendView,
  leader: LeaderVerdict,
): { condition: DecidedCondition; total?: bigint; used?: bigint } {
  if (!leader.serving) {
    const c = leader.condition;
    return { condition: cond('CapacityObserved', 'False', c.reason, c.message) };
  }
  const m = v.store!.metrics;
  if (!m?.ok)
    return { condition: cond('CapacityObserved', 'False', 'ScrapeFailed', m?.message ?? 'no metrics read') };
  const cap = capacityFrom(m.value, v.includeFiles);
  if (!cap) {
    return {
      condition: cond(
        'CapacityObserved',
        'False',
        'FamilyMissing',
        'the master’s /metrics has no master_total_capacity_bytes or master_allocated_bytes',
      ),
    };
  }
  return {
    condition: cond(
      'CapacityObserved',
      'True',
      'Observed',
      `the master reports ${formatBinarySI(cap.total)} of capacity, ${formatBinarySI(cap.used)} in use`,
    ),
    total: cap.total,
    used: cap.used,
  };
}

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
  rows.sort(
    (a, b) =>
      (a.segmentName ?? '').localeCompare(b.segmentName ?? '') || a.segmentID.localeCompare(b.segmentID),
  );
  return { rows, ambiguous };
}

function membersVerdict(
  v: BackendView,
  leader: LeaderVerdict,
): { condition: DecidedCondition; rows?: MemberRow[] } {
  if (!leader.serving) {
    const c = leader.condition;
    return { condition: cond('MembersMounted', 'False', c.reason, c.message), rows: v.previousMembers };
  }
  const listing = v.store!.segments;
  if (!listing?.ok) {
    const reason = listing?.reason ?? 'ListingFailed';
    return {
      condition: cond('MembersMounted', 'False', reason, listing?.message ?? 'no listing read'),
      rows: v.previousMembers,
    };
  }
  if (!listing.value.served) {
    return {
      condition: cond(
        'MembersMounted',
        'Unknown',
        'SegmentListingNotServed',
        'the master serves no /get_segments_detail (Mooncake before 0.3.12)',
      ),
      rows: [],
    };
  }
  const segments = listing.value.segments;
  const { rows, ambiguous } = memberRows(segments, v);
  if (ambiguous.length) {
    return {
      condition: cond(
        'MembersMounted',
        'False',
        'AmbiguousMemberIdentity',
        `several member Pods share one address: ${nameList(ambiguous)}`,
      ),
      rows,
    };
  }
  const stuck = v.memberPods.filter((p) => !p.ready && !p.deleting && p.fault);
  if (stuck.length) {
    const first = stuck[0]!;
    const names = nameList(stuck.map((p) => `${p.name}${p.nodeName ? ` on ${p.nodeName}` : ''}`));
    return {
      condition: cond(
        'MembersMounted',
        'False',
        first.fault!.reason,
        `member Pod ${names}: ${first.fault!.message}`,
      ),
      rows,
    };
  }
  if (segments.length === 0) {
    return {
      condition: cond('MembersMounted', 'False', 'NoSegments', 'the leader lists no mounted segment'),
      rows,
    };
  }
  const listed = new Set(segments.map((s) => endpointHost(s.teEndpoint)));
  const missing = v.memberPods.filter((p) => p.ready && !p.deleting && p.podIP && !listed.has(p.podIP));
  if (missing.length) {
    const names = nameList(missing.map((p) => `${p.name}${p.nodeName ? ` on ${p.nodeName}` : ''}`));
    return {
      condition: cond(
        'MembersMounted',
        'False',
        'SegmentsShort',
        `ready member Pods without a segment on the leader: ${names}`,
      ),
      rows,
    };
  }
  return {
    condition: cond('MembersMounted', 'True', 'Mounted', `leader lists ${segments.length} segment(s)`),
    rows,
  };
}

function poolWritesVerdict(v: BackendView, leader: LeaderVerdict): DecidedCondition {
  const m = leader.serving ? v.store!.metrics : undefined;
  const listing = leader.serving ? v.store!.segments : undefined;
  if (!m?.ok || !listing?.ok || !listing.value.served) {
    return cond(
      'PoolWrites',
      'Unknown',
      'NoObservation',
      'the leader’s counters or segment listing could not be read',
    );
  }
  const putEnd = gauge(m.value, 'master_put_end_requests_total') ?? 0;
  const putStart = gauge(m.value, 'master_put_start_requests_total') ?? 0;
  const putRevoke = gauge(m.value, 'master_put_revoke_requests_total') ?? 0;
  const anyUsed = listing.value.segments.some((s) => (s.usedBytes ?? 0) > 0);
  if (putEnd > 0 || anyUsed)
    return cond('PoolWrites', 'True', 'WritesLanded', 'writes have completed on this leader');
  if (putStart > 0 && putRevoke > 0) {
    return cond(
      'PoolWrites',
      'False',
      'WritesRevoked',
      `${putStart} write(s) started and were revoked, and no member holds data`,
    );
  }
  if (putStart > 0)
    return cond(
      'PoolWrites',
      'Unknown',
      'WritesUnfinished',
      'writes have started but none has completed yet',
    );
  return cond('PoolWrites', 'Unknown', 'NoWrites', 'no write has started since the leader started');
}

function rolloutVerdict(v: BackendView): DecidedCondition | undefined {
  if (!v.managed || !v.deployment) return undefined;
  if (v.deployment === 'unreadable')
    return cond(
      'RolloutComplete',
      'Unknown',
      'WorkloadUnreadable',
      'the leader Deployment could not be read',
    );
  const d = v.deployment;
  if (d.observedGeneration < d.generation) {
    return cond(
      'RolloutComplete',
      'Unknown',
      'UpdateNotObserved',
      'the Deployment controller has not observed the latest leader template yet',
    );
  }
  if (v.replicasPending) {
    return cond(
      'RolloutComplete',
      'False',
      'ReplicasPending',
      'the elected template runs at one replica first; the replicas are raised once no old replica remains',
    );
  }
  if (d.updated === d.replicas && d.replicas === d.desired) {
    return cond(
      'RolloutComplete',
      'True',
      'Complete',
      `every leader replica (${d.desired}) runs the current template`,
    );
  }
  return cond(
    'RolloutComplete',
    'False',
    'Progressing',
    `${d.updated} of ${d.desired} leader replicas run the current template (${d.replicas} exist)`,
  );
}

function electionVerdict(v: BackendView): DecidedCondition | undefined {
  if (!v.managed || !v.election) return undefined;
  if (v.lease === 'unreadable')
    return cond('ElectionObserved', 'Unknown', 'LeaseUnreadable', 'the leader Lease could not be read');
  if (v.lease?.holder)
    return cond('ElectionObserved', 'True', 'Electing', `the Lease names ${v.lease.holder} as holder`);
  if (v.leaderPods.some((p) => p.ready)) {
    return cond(
      'ElectionObserved',
      'False',
      'NoHolder',
      'a leader replica is ready but the Lease names no holder: check the image, the leader RoleBinding, or wait for the first campaign',
    );
  }
  return cond('ElectionObserved', 'Unknown', 'LeaderStarting', 'no leader replica has campaigned yet');
}

export function decideBackendStatus(v: BackendView): BackendStatusDecision {
  const claimants = v.usedBy.map((u) => `${u.kind}/${u.namespace ? `${u.namespace}/` : ''}${u.name}`);
  const deletable = claimants.length
    ? cond('Deletable', 'False', 'InUse', `used by ${nameList(claimants)}; delete those first`)
    : cond('Deletable', 'True', 'NotInUse', 'nothing uses this backend');
  const leader = leaderVerdict(v);
  const capacity = capacityVerdict(v, leader);
  const members = membersVerdict(v, leader);
  const conditions = [
    leader.condition,
    capacity.condition,
    members.condition,
    poolWritesVerdict(v, leader),
    deletable,
    rolloutVerdict(v),
    electionVerdict(v),
    v.tierWasEmpty,
  ].filter((c): c is DecidedCondition => c !== undefined);
  const decision: BackendStatusDecision = {
    ...phaseOf(v, leader, members.condition, capacity.total, deletable),
    conditions,
    ...(capacity.total !== undefined
      ? { capacity: { total: formatBinarySI(capacity.total), used: formatBinarySI(capacity.used!) } }
      : {}),
    ...(members.rows ? { members: members.rows } : {}),
  };
  return decision;
}

function phaseOf(
  v: BackendView,
  leader: LeaderVerdict,
  members: DecidedCondition,
  total: bigint | undefined,
  deletable: DecidedCondition,
): Pick<BackendStatusDecision, 'phase' | 'phaseMessage'> {
  if (v.deleting) {
    return {
      phase: 'Deleting',
      phaseMessage: deletable.status === 'False' ? deletable.message : 'tearing down the store',
    };
  }
  if (v.renderProblem) return { phase: 'Degraded', phaseMessage: v.renderProblem };
  if (leader.severity === 'error') return { phase: 'Error', phaseMessage: leader.condition.message };
  if (leader.severity === 'starting')
    return { phase: 'Provisioning', phaseMessage: leader.condition.message };
  if (total === undefined)
    return { phase: 'Provisioning', phaseMessage: 'capacity has not been observed yet' };
  if (members.status === 'False') return { phase: 'Degraded', phaseMessage: members.message };
  if (total === 0n)
    return {
      phase: 'Degraded',
      phaseMessage: 'the master reports no capacity: no member has mounted a segment',
    };
  return { phase: 'Ready', phaseMessage: '' };
}
