// Everything a managed KVCacheBackend runs, rendered as server-side-apply intent (pure: same input, same bytes).
import type { DaemonSet, Deployment, StatefulSet } from 'kubernetes-types/apps/v1.js';
import type { Lease } from 'kubernetes-types/coordination/v1.js';
import type { Service, ServiceAccount } from 'kubernetes-types/core/v1.js';
import type { NetworkPolicy } from 'kubernetes-types/networking/v1.js';
import type { PodDisruptionBudget } from 'kubernetes-types/policy/v1.js';
import type { Role, RoleBinding } from 'kubernetes-types/rbac/v1.js';
import type { KVCacheBackend } from '../../api/types.ts';
import type { KubeObject } from '../../kube/object.ts';
import { managedConnection } from '../../vocabulary/backend-spec.ts';
import { operatorPodLabels } from '../../vocabulary/store-objects.ts';
import { renderElectionRbac, renderLeaderDisruptionBudget, renderLeaderLease } from './render-access.ts';
import type { BackendRenderContext } from './render-context.ts';
import { renderEtcdService, renderEtcdStatefulSet } from './render-etcd.ts';
import { renderAdminService, renderLeaderDeployment, renderLeaderService } from './render-leader.ts';
import { renderMemberDaemonSet } from './render-members.ts';
import { storeNetworkPolicies } from './render-network.ts';

export { type ResolvedImages, resolveImages } from '../../vocabulary/backend-spec.ts';
export type { BackendRenderContext } from './render-context.ts';

export interface RenderedBackend {
  leaderDeployment: KubeObject<Deployment>;
  leaderService: KubeObject<Service>;
  adminService: KubeObject<Service>;
  /** Empty without an election. */
  rbac: KubeObject<ServiceAccount | Role | RoleBinding>[];
  /** Without an election, none. */
  lease: KubeObject<Lease> | undefined;
  networkPolicies: KubeObject<NetworkPolicy>[];
  disruptionBudget: KubeObject<PodDisruptionBudget>;
  /** One per `members[i]`, in group order. */
  memberDaemonSets: KubeObject<DaemonSet>[];
  /** The etcd the operator runs for replicated metadata (electionBackend Etcd), with its headless Service. */
  etcd: { statefulSet: KubeObject<StatefulSet>; service: KubeObject<Service> } | undefined;
}

/** The leader Deployment and Services, the election's RBAC and Lease (or its etcd), the policies and one DaemonSet per member group. */
export function renderBackend(backend: KVCacheBackend, ctx: BackendRenderContext): RenderedBackend {
  return {
    leaderDeployment: renderLeaderDeployment(backend, ctx),
    leaderService: renderLeaderService(backend, ctx),
    adminService: renderAdminService(backend, ctx),
    rbac: renderElectionRbac(backend, ctx),
    lease: renderLeaderLease(backend, ctx),
    networkPolicies: storeNetworkPolicies(backend, ctx.boundNamespaces, {
      namespace: ctx.namespace,
      podLabels: operatorPodLabels,
    }),
    disruptionBudget: renderLeaderDisruptionBudget(backend, ctx),
    memberDaemonSets: managedConnection(backend).members.map((_, i) =>
      renderMemberDaemonSet(backend, i, ctx),
    ),
    etcd: renderEtcd(backend, ctx),
  };
}

function renderEtcd(backend: KVCacheBackend, ctx: BackendRenderContext): RenderedBackend['etcd'] {
  const statefulSet = renderEtcdStatefulSet(backend, ctx);
  return statefulSet ? { statefulSet, service: renderEtcdService(backend, ctx) } : undefined;
}
