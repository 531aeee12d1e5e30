// Who may do what around a managed store: the election's accounts (each touching one Lease, the leader's
// also reading its seed ConfigMap), the Lease itself (created here, so the store needs no create), and
// the leader's PodDisruptionBudget. Who may reach its ports: render-network.ts.
import type { Lease } from 'kubernetes-types/coordination/v1.js';
import type { ServiceAccount } from 'kubernetes-types/core/v1.js';
import type { PodDisruptionBudget } from 'kubernetes-types/policy/v1.js';
import type { PolicyRule, Role, RoleBinding } from 'kubernetes-types/rbac/v1.js';
import type { KVCacheBackend } from '../../api/types.ts';
import { stepDownAnnotation } from '../../kube/leader-election.ts';
import type { KubeObject } from '../../kube/object.ts';
import { electionOn, leaseElection, membersReadLease, tenancyOn } from '../../vocabulary/backend-spec.ts';
import {
  backendName,
  backendSelector,
  childMetadata,
  leaderComponent,
  leaderName,
  memberAccountName,
  memberRbacComponent,
  seedConfigMapName,
} from '../../vocabulary/store-objects.ts';
import type { BackendRenderContext } from './render-context.ts';
import { leaderReplicas } from './render-leader.ts';

/** A ServiceAccount, Role and RoleBinding sharing one name. */
function accountWithRole(
  backend: KVCacheBackend,
  ctx: BackendRenderContext,
  name: string,
  component: string,
  rules: PolicyRule[],
): KubeObject<ServiceAccount | Role | RoleBinding>[] {
  const metadata = () => childMetadata(backend, ctx.namespace, name, component);
  const account: KubeObject<ServiceAccount> = {
    apiVersion: 'v1',
    kind: 'ServiceAccount',
    metadata: metadata(),
    automountServiceAccountToken: false,
  };
  const role: KubeObject<Role> = {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'Role',
    metadata: metadata(),
    rules,
  };
  const binding: KubeObject<RoleBinding> = {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'RoleBinding',
    metadata: metadata(),
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name },
    subjects: [{ kind: 'ServiceAccount', name, namespace: ctx.namespace }],
  };
  return [account, role, binding];
}

/**
 * The election's accounts: the leader reads and renews (one JSON patch) its own Lease and, with tenancy,
 * reads its seed ConfigMap as it wins; members (by Lease) read the Lease.
 */
export function renderElectionRbac(
  backend: KVCacheBackend,
  ctx: BackendRenderContext,
): KubeObject<ServiceAccount | Role | RoleBinding>[] {
  if (!leaseElection(backend)) return [];
  const lease = (verbs: string[]): PolicyRule => ({
    apiGroups: ['coordination.k8s.io'],
    resources: ['leases'],
    resourceNames: [leaderName(backend)],
    verbs,
  });
  return [
    ...accountWithRole(backend, ctx, leaderName(backend), leaderComponent, [
      lease(['get', 'update', 'patch']),
      ...(tenancyOn(backend)
        ? [
            {
              apiGroups: [''],
              resources: ['configmaps'],
              resourceNames: [seedConfigMapName(backendName(backend))],
              verbs: ['get'],
            },
          ]
        : []),
    ]),
    ...(membersReadLease(backend)
      ? accountWithRole(backend, ctx, memberAccountName(backend), memberRbacComponent, [lease(['get'])])
      : []),
  ];
}

/**
 * The Lease the leaders campaign for, created by the operator (no spec: the store writes that). It
 * names the replicas that must not lead while a rollout or a drain hands leadership over.
 */
export function renderLeaderLease(
  backend: KVCacheBackend,
  ctx: BackendRenderContext,
): KubeObject<Lease> | undefined {
  if (!leaseElection(backend)) return undefined;
  const metadata = childMetadata(backend, ctx.namespace, leaderName(backend), leaderComponent);
  return {
    apiVersion: 'coordination.k8s.io/v1',
    kind: 'Lease',
    metadata: {
      ...metadata,
      ...(ctx.leaderStepDown?.length
        ? { annotations: { [stepDownAnnotation]: ctx.leaderStepDown.join(',') } }
        : {}),
    },
  };
}

/**
 * The leader's PodDisruptionBudget. With standbys, the serving leader cannot be evicted (standbys,
 * never ready, can: AlwaysAllow), so a drain waits on its node until the operator has handed
 * leadership to a standby elsewhere. A single leader has no one to hand over to: its eviction is
 * allowed, and the drain costs the cache.
 */
export function renderLeaderDisruptionBudget(
  backend: KVCacheBackend,
  ctx: BackendRenderContext,
): KubeObject<PodDisruptionBudget> {
  const guarded = electionOn(backend) && leaderReplicas(backend, ctx) > 1;
  return {
    apiVersion: 'policy/v1',
    kind: 'PodDisruptionBudget',
    metadata: childMetadata(backend, ctx.namespace, leaderName(backend), leaderComponent),
    spec: {
      selector: { matchLabels: backendSelector(backendName(backend), leaderComponent) },
      ...(guarded ? { minAvailable: 1 } : { maxUnavailable: 1 }),
      unhealthyPodEvictionPolicy: 'AlwaysAllow',
    },
  };
}
