// MetadataReplicated and EtcdAvailable, and status.replication, for a store with replicated metadata
// (decision 50): whether a standby follows the OpLog, so that a failover now would keep the index, and
// whether a quorum of the etcd the operator runs answers. Pure.
import { BackendCondition, BackendReason, backendConditions } from '../../api/kvcache-backend-conditions.ts';
import type { EtcdMemberReading, StandbyReading } from '../../store/replication.ts';
import { type DecidedCondition, deciderOf, nameList } from '../../vocabulary/conditions.ts';

const cond = deciderOf(backendConditions);

/** A standby further behind than one OpLog batch (the master's oplog_batch_max_entries) is lagging. */
export const lagLimitEntries = 1024;

export interface ReplicationInput {
  /** Whether a master was read serving this pass: without one, there is no OpLog to follow. */
  serving: boolean;
  standbys: StandbyReading[];
  /** Undefined for an etcd the operator does not run. */
  etcd?: { replicas: number; members: EtcdMemberReading[] };
}

export interface ReplicationFigures {
  standbys: number;
  following: number;
  lagEntries?: number;
  etcdMembers?: number;
  etcdHealthy?: number;
}

export interface ReplicationDecision {
  conditions: DecidedCondition[];
  figures: ReplicationFigures;
}

/** Standbys that report their place in the OpLog, best (least behind) first. */
function following(standbys: StandbyReading[]): StandbyReading[] {
  return standbys
    .filter((s) => s.role === 'standby' && s.lagEntries !== undefined)
    .sort((a, b) => a.lagEntries! - b.lagEntries!);
}

function replicatedVerdict(input: ReplicationInput, follows: StandbyReading[]): DecidedCondition {
  const type = BackendCondition.MetadataReplicated;
  if (!input.serving)
    return cond(type, 'Unknown', BackendReason.NotObserved, 'no master serves: no OpLog is written');
  if (follows.length === 0) {
    const unread = input.standbys.filter((s) => s.error).map((s) => `${s.pod} (${s.error})`);
    const why =
      input.standbys.length === 0
        ? 'no standby runs'
        : `no standby reports its place in it${unread.length ? `: ${nameList(unread, 3)}` : ''}`;
    return cond(
      type,
      'False',
      BackendReason.NoStandby,
      `no standby follows the OpLog (${why}): a failover now would start with an empty index`,
    );
  }
  const best = follows[0]!;
  const lag = `${best.lagEntries} entries behind (applied to ${best.appliedSequence ?? '?'})`;
  if (best.lagEntries! > lagLimitEntries)
    return cond(
      type,
      'False',
      BackendReason.Lagging,
      `the nearest standby, ${best.pod}, is ${lag}: a failover now would lose what it has not applied`,
    );
  return cond(
    type,
    'True',
    BackendReason.Following,
    `${follows.length} standby(s) follow the OpLog; ${best.pod} is ${lag}`,
  );
}

function etcdVerdict(etcd: NonNullable<ReplicationInput['etcd']>): DecidedCondition {
  const type = BackendCondition.EtcdAvailable;
  if (etcd.members.length === 0)
    return cond(type, 'Unknown', BackendReason.NotObserved, 'no etcd member Pod has an address yet');
  const healthy = etcd.members.filter((m) => m.healthy).length;
  const down = etcd.members.filter((m) => !m.healthy).map((m) => `${m.pod}${m.error ? ` (${m.error})` : ''}`);
  const missing = etcd.replicas - etcd.members.length;
  const summary = `${healthy} of ${etcd.replicas} members healthy`;
  const detail = [
    ...(down.length ? [`down: ${nameList(down, 3)}`] : []),
    ...(missing > 0 ? [`${missing} without a Pod address`] : []),
  ];
  if (healthy <= etcd.replicas / 2)
    return cond(
      type,
      'False',
      BackendReason.QuorumLost,
      `${summary} (${detail.join('; ')}): no quorum, so no master can be elected or write its OpLog`,
    );
  if (healthy < etcd.replicas)
    return cond(
      type,
      'True',
      BackendReason.MemberDown,
      `${summary} (${detail.join('; ')}); the quorum holds`,
    );
  return cond(type, 'True', BackendReason.Healthy, summary);
}

export function decideReplication(input: ReplicationInput): ReplicationDecision {
  const follows = following(input.standbys);
  const conditions = [replicatedVerdict(input, follows), ...(input.etcd ? [etcdVerdict(input.etcd)] : [])];
  return {
    conditions,
    figures: {
      standbys: input.standbys.length,
      following: follows.length,
      ...(follows[0]?.lagEntries !== undefined ? { lagEntries: follows[0].lagEntries } : {}),
      ...(input.etcd
        ? {
            etcdMembers: input.etcd.replicas,
            etcdHealthy: input.etcd.members.filter((m) => m.healthy).length,
          }
        : {}),
    },
  };
}
