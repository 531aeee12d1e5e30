// What the backend's status is decided from (a BackendView, gathered by view.ts) and the verdicts the
// decision's parts hand each other: a leaf, shared by status.ts and status-members.ts.
import type { ReasonOf, RelayedReason } from '../../api/condition-table.ts';
import type { KVCacheBackendStatus } from '../../api/kvcache-backend.ts';
import type { backendConditions } from '../../api/kvcache-backend-conditions.ts';
import type { UsedByEntry } from '../../api/schema.ts';
import type { StoreObservation } from '../../store/observe.ts';
import type { ChildConflict } from '../../vocabulary/child-ownership.ts';
import type { DecidedCondition } from '../../vocabulary/conditions.ts';
import type { PodView } from './pod-view.ts';
import type { MemberRollPlan } from './rollout-plan.ts';

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
  /** Children whose names objects this backend does not control hold (left alone, not applied). */
  conflicts?: ChildConflict[];
  /** The admin endpoint read this pass; undefined when none is known (no ready leader). */
  adminAddress?: string;
  store?: StoreObservation;
  /** A disk tier is declared, or the store is external: capacity includes the file tier. */
  includeFiles: boolean;
  leaderPods: PodView[];
  /** Member Pods with the index of their group. */
  memberPods: (PodView & { group: number })[];
  groupMedium: string[];
  deployment?: DeploymentView;
  /** Two-step raise of leader replicas in progress. */
  replicasPending?: boolean;
  /** Where the member rollout stands (one Pod at a time). */
  memberRoll?: MemberRollPlan;
  /** Why leadership stays or moves while a leader rollout or a drain is under way. */
  handover?: string;
  election: boolean;
  /** How the serving master is elected: the Lease (its holder below) or etcd (the masters' own view). */
  electionBackend?: 'Kubernetes' | 'Etcd' | 'None';
  lease?: { holder?: string };
  /** Rows of the previous status, kept when a listing fails. */
  previousMembers?: MemberRow[];
  /** Member groups kept off nodes their selector matches by taints they do not tolerate, in words. */
  placementGaps?: string[];
  /** Decided once from the first members' survey (disk tier only); undefined while undecided. */
  tierWasEmpty?: DecidedCondition;
  /** Whether the tier members' disks take the store's writes (decision 39); undefined while none runs. */
  tierWritable?: DecidedCondition;
}

/** One row of status.members. */
export type MemberRow = NonNullable<KVCacheBackendStatus['members']>[number];

export type LeaderReason = ReasonOf<typeof backendConditions, 'LeaderAvailable'> | RelayedReason;

export interface LeaderVerdict {
  condition: DecidedCondition<'LeaderAvailable', LeaderReason>;
  serving: boolean;
  severity: 'ok' | 'starting' | 'error';
}
