// The conditions of a KVCacheBackend: each type with the reasons it may carry.
import { conditionReasons, conditionTypes } from './condition-table.ts';
import { RolloutCompleteReason } from './kvcache-backend.ts';

/** Why a leader or member Pod cannot get going by waiting; other waiting reasons are relayed as they are. */
export const podFaultReasons = [
  'LeaderUnschedulable',
  'Unschedulable',
  'LeaderCrashLooping',
  'LeaderInitCrashLooping',
  'MemberCrashLooping',
  'MemberInitCrashLooping',
  /** The kubelet's Warning event for a volume it cannot mount, which keeps the Pod creating. */
  'FailedMount',
] as const;
export type PodFaultReason = (typeof podFaultReasons)[number];

const leaderAvailable = [
  'Serving',
  'NoAdminEndpoint',
  'LeaderStarting',
  'LeaderUnreachable',
  'ServicePlaneNotActive',
  ...podFaultReasons,
] as const;

export const backendConditions = {
  LeaderAvailable: leaderAvailable,
  /** Not observed while the leader does not serve: then it carries the leader's reason. */
  CapacityObserved: [...leaderAvailable, 'ScrapeFailed', 'FamilyMissing', 'Observed'],
  MembersMounted: [
    ...leaderAvailable,
    'ListingFailed',
    'ListingTooLarge',
    'SegmentListingNotServed',
    'AmbiguousMemberIdentity',
    'NoSegments',
    'SegmentsShort',
    'Mounted',
  ],
  PoolWrites: ['NoObservation', 'WritesLanded', 'WritesRevoked', 'WritesUnfinished', 'NoWrites'],
  Deletable: ['InUse', 'NotInUse'],
  RolloutComplete: Object.values(RolloutCompleteReason),
  ElectionObserved: ['Electing', 'NoHolder', 'LeaderStarting'],
  TierWasEmpty: ['PreexistingContent', 'Empty', 'ForeignContentRefused', 'ForeignContentRemoved'],
  /** Whether the members' disk tiers take the store's writes (decision 39): what their master does not report. */
  TierWritable: ['Writable', 'WriteFailed', 'NoRoom', 'NotObserved'],
  /** With replicated metadata (decision 50): whether a standby follows the OpLog, so a failover keeps the index. */
  MetadataReplicated: ['Following', 'Lagging', 'NoStandby', 'NotObserved'],
  /** The etcd the operator runs for replicated metadata: whether a quorum of its members answers. */
  EtcdAvailable: ['Healthy', 'MemberDown', 'QuorumLost', 'NotObserved'],
} as const;

export const BackendCondition = conditionTypes(backendConditions);
export const BackendReason = conditionReasons(backendConditions);
