// Who may do what around a managed store: the election's accounts (each touching one Lease), the Lease
// itself (created here, so the store needs no create), the NetworkPolicies (engines reach the RPC and
// transfer ports only, the operator alone the admin port), and the leader's PodDisruptionBudget.
import type { Lease } from 'kubernetes-types/coordination/v1.js';
import type { ServiceAccount } from 'kubernetes-types/core/v1.js';
import type { NetworkPolicy, NetworkPolicyPort, NetworkPolicySpec } from 'kubernetes-types/networking/v1.js';
import type { PodDisruptionBudget } from 'kubernetes-types/policy/v1.js';
import type { PolicyRule, Role, RoleBinding } from 'kubernetes-types/rbac/v1.js';
import type { KVCacheBackend } from '../../api/types.ts';
import { stepDownAnnotation } from '../../kube/leader-election.ts';
import type { KubeObject } from '../../kube/object.ts';
import { electionOn, managedConnection, membersReadLease } from '../../model/backend-spec.ts';
import {
  backendName,
  backendSelector,
  childMetadata,
  componentLabel,
  instanceLabel,
  leaderAdminPort,
  leaderComponent,
  leaderName,
  leaderRpcPort,
  memberAccountName,
  memberComponent,
  memberRbacComponent,
  nameLabel,
  operatorPodLabels,
} from '../../model/store-objects.ts';
import type { BackendRenderContext } from './render-context.ts';
import { leaderReplicas } from './render-leader.ts';

/**
 * The ports a member's transfer engine listens on, as the wheel picks them: its handshake and TCP
 * data ports from MC_MIN_RPC_PORT..MC_MAX_RPC_PORT, and the store client's from
 * MC_STORE_CLIENT_MIN_PORT..MC_STORE_CLIENT_MAX_PORT (both left at their defaults).
 */
export const transferPortRanges = [
  { first: 15000, last: 17000 },
  { first: 12300, last: 14300 },
];
export const tierCleanupComponent = 'tier-cleanup';

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

/** The election's accounts: the leader reads and renews (one JSON patch) its own Lease, members (by Lease) read it. */
export function renderElectionRbac(
  backend: KVCacheBackend,
  ctx: BackendRenderContext,
): KubeObject<ServiceAccount | Role | RoleBinding>[] {
  if (!electionOn(backend)) return [];
  const lease = (verbs: string[]): PolicyRule => ({
    apiGroups: ['coordination.k8s.io'],
    resources: ['leases'],
    resourceNames: [leaderName(backend)],
    verbs,
  });
  return [
    ...accountWithRole(backend, ctx, leaderName(backend), leaderComponent, [
      lease(['get', 'update', 'patch']),
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
  if (!electionOn(backend)) return undefined;
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

function policy(
  backend: KVCacheBackend,
  ctx: BackendRenderContext,
  name: string,
  component: string,
  spec: NetworkPolicySpec,
): KubeObject<NetworkPolicy> {
  return {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: childMetadata(backend, ctx.namespace, name, component),
    spec,
  };
}

/**
 * Ingress to the store's Pods: the leader's RPC port from anywhere (engines and members), its admin
 * port from the operator's Pods only; the members' transfer ports from anywhere; nothing to or from
 * a tier cleanup Pod. The probe port and each member's REST port are left to the kubelet, whose
 * traffic from the Pod's own node NetworkPolicies do not govern. Host-network members are outside any
 * NetworkPolicy.
 */
export function renderNetworkPolicies(
  backend: KVCacheBackend,
  ctx: BackendRenderContext,
): KubeObject<NetworkPolicy>[] {
  const name = backendName(backend);
  const tcp = (port: number, endPort?: number): NetworkPolicyPort => ({
    protocol: 'TCP',
    port,
    ...(endPort ? { endPort } : {}),
  });
  const groups = managedConnection(backend).members.map((_, i) => memberComponent(i));
  return [
    policy(backend, ctx, leaderName(backend), leaderComponent, {
      podSelector: { matchLabels: backendSelector(name, leaderComponent) },
      policyTypes: ['Ingress'],
      ingress: [
        { ports: [tcp(leaderRpcPort)] },
        { from: [{ podSelector: { matchLabels: operatorPodLabels } }], ports: [tcp(leaderAdminPort)] },
      ],
    }),
    policy(backend, ctx, `${name}-member`, memberRbacComponent, {
      podSelector: {
        matchLabels: { [nameLabel]: 'kv-cache-backend', [instanceLabel]: name },
        matchExpressions: [{ key: componentLabel, operator: 'In', values: groups }],
      },
      policyTypes: ['Ingress'],
      ingress: [{ ports: transferPortRanges.map((r) => tcp(r.first, r.last)) }],
    }),
    policy(backend, ctx, `${name}-${tierCleanupComponent}`, tierCleanupComponent, {
      podSelector: { matchLabels: backendSelector(name, tierCleanupComponent) },
      policyTypes: ['Ingress', 'Egress'],
    }),
  ];
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
