// The backend's conditions, phase, capacity and member rows, decided from what the store and the
// cluster report (docs/api-reference.md, KVCacheBackend status). Pure: the reconciler gathers a
// BackendView and writes what this returns.
import { RolloutCompleteReason as Rollout } from '../../api/kvcache-backend.ts';
import { backendConditions } from '../../api/kvcache-backend-conditions.ts';
import { formatQuantity } from '../../kube/readable-quantity.ts';
import { capacityFrom } from '../../store/observe.ts';
import { childConflictMessage } from '../../vocabulary/child-ownership.ts';
import { type DecidedCondition, deciderOf, nameList } from '../../vocabulary/conditions.ts';
import { formatBinarySI } from '../../vocabulary/quantity.ts';
import { membersVerdict, poolWritesVerdict } from './status-members.ts';
import type { BackendView, LeaderReason, LeaderVerdict, MemberRow } from './status-view.ts';

export { endpointHost } from './status-members.ts';
export type { BackendView, DeploymentView, LeaderVerdict, MemberRow } from './status-view.ts';

export interface BackendStatusDecision {
  phase: 'Provisioning' | 'Ready' | 'Degraded' | 'Error' | 'Deleting';
  phaseMessage: string;
  conditions: DecidedCondition[];
  capacity?: { total: string; used: string };
  members?: MemberRow[];
}

const cond = deciderOf(backendConditions);

function leaderVerdict(v: BackendView): LeaderVerdict {
  const bad = (reason: LeaderReason, message: string, severity: 'starting' | 'error'): LeaderVerdict => ({
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
      `the master reports ${formatQuantity(cap.total)} of capacity, ${formatQuantity(cap.used)} in use`,
    ),
    total: cap.total,
    used: cap.used,
  };
}

function rolloutVerdict(v: BackendView): DecidedCondition | undefined {
  if (v.managed && v.conflicts?.length)
    return cond(
      'RolloutComplete',
      'False',
      Rollout.ChildConflict,
      childConflictMessage(v.conflicts, 'KVCacheBackend'),
    );
  if (!v.managed || !v.deployment) return undefined;
  const d = v.deployment;
  if (d.observedGeneration < d.generation) {
    return cond(
      'RolloutComplete',
      'Unknown',
      Rollout.UpdateNotObserved,
      'the Deployment controller has not observed the latest leader template yet',
    );
  }
  if (v.replicasPending) {
    return cond(
      'RolloutComplete',
      'False',
      Rollout.ReplicasPending,
      'the elected template runs at one replica first; the replicas are raised once no old replica remains',
    );
  }
  const members = v.memberRoll && v.memberRoll.kind !== 'done' ? v.memberRoll.message : undefined;
  if (d.updated !== d.replicas || d.replicas !== d.desired) {
    const more = [v.handover, members]
      .filter(Boolean)
      .map((m) => `; ${m}`)
      .join('');
    return cond(
      'RolloutComplete',
      'False',
      Rollout.Progressing,
      `${d.updated} of ${d.desired} leader replicas run the current template (${d.replicas} exist)${more}`,
    );
  }
  if (members) return cond('RolloutComplete', 'False', Rollout.MembersRolling, members);
  return cond(
    'RolloutComplete',
    'True',
    Rollout.Complete,
    `every leader replica (${d.desired}) and member Pod runs the current template`,
  );
}

/** With etcd the masters elect themselves: the serving one's /health names it and the view's number. */
function etcdElectionVerdict(v: BackendView): DecidedCondition {
  const health = v.store?.health.ok ? v.store.health.value : undefined;
  if (health?.leaderAddress) {
    const view = health.viewVersion !== undefined ? ` (view ${health.viewVersion})` : '';
    return cond(
      'ElectionObserved',
      'True',
      'Electing',
      `etcd names ${health.leaderAddress} as the serving master${view}`,
    );
  }
  if (v.leaderPods.some((p) => p.ready)) {
    return cond(
      'ElectionObserved',
      'False',
      'NoHolder',
      "a leader replica is ready but its master names no leader: check the master's etcd connection (kubectl logs)",
    );
  }
  return cond('ElectionObserved', 'Unknown', 'LeaderStarting', 'no master has won the etcd election yet');
}

function electionVerdict(v: BackendView): DecidedCondition | undefined {
  if (!v.managed || !v.election) return undefined;
  if (v.electionBackend === 'Etcd') return etcdElectionVerdict(v);
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
    v.tierWritable,
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
  if (v.managed && v.conflicts?.length)
    return { phase: 'Degraded', phaseMessage: childConflictMessage(v.conflicts, 'KVCacheBackend') };
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
