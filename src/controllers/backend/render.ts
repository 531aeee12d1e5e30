// Everything a managed KVCacheBackend runs, rendered as server-side-apply intent (pure: same input, same bytes).
import type { KVCacheBackend } from '../../api/types.ts';
import type { KubeObject } from '../../kube/object.ts';
import { managedConnection } from './effective-spec.ts';
import {
  renderElectionRbac,
  renderLeaderDisruptionBudget,
  renderLeaderLease,
  renderNetworkPolicies,
} from './render-access.ts';
import { renderAdminService, renderLeaderDeployment, renderLeaderService } from './render-leader.ts';
import { renderMemberDaemonSet } from './render-members.ts';

export { type ResolvedImages, resolveImages } from './effective-spec.ts';

export interface BackendRenderContext {
  /** The operator namespace every child lives in. */
  namespace: string;
  /** The `kv-cache-backend-image` Setting, resolved by the caller. */
  defaultImage: string;
  /** Holds the leader at this many replicas (raising HA from an unelected template goes through 1 first). */
  leaderReplicasOverride?: number;
  /** The leader Pods the Lease asks not to lead (a rollout or a drain hands leadership over). */
  leaderStepDown?: string[];
}

export interface RenderedBackend {
  leaderDeployment: KubeObject;
  leaderService: KubeObject;
  adminService: KubeObject;
  /** Empty without an election. */
  rbac: KubeObject[];
  /** Without an election, none. */
  lease: KubeObject | undefined;
  networkPolicies: KubeObject[];
  disruptionBudget: KubeObject;
  /** One per `members[i]`, in group order. */
  memberDaemonSets: KubeObject[];
}

/** The leader Deployment and Services, the election's RBAC and Lease, the policies and one DaemonSet per member group. */
export function renderBackend(backend: KVCacheBackend, ctx: BackendRenderContext): RenderedBackend {
  return {
    leaderDeployment: renderLeaderDeployment(backend, ctx),
    leaderService: renderLeaderService(backend, ctx),
    adminService: renderAdminService(backend, ctx),
    rbac: renderElectionRbac(backend, ctx),
    lease: renderLeaderLease(backend, ctx),
    networkPolicies: renderNetworkPolicies(backend, ctx),
    disruptionBudget: renderLeaderDisruptionBudget(backend, ctx),
    memberDaemonSets: managedConnection(backend).members.map((_, i) =>
      renderMemberDaemonSet(backend, i, ctx),
    ),
  };
}
