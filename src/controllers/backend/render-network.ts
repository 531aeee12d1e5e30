// Who may reach a managed store's Pods (pure): the RPC and transfer ports the engines of the namespaces
// holding a Binding to the store and the store's own Pods, the admin port the operator alone, and a
// tier cleanup Pod nothing. See docs/decisions/0035-store-network-policies.md.
import type {
  NetworkPolicy,
  NetworkPolicyPeer,
  NetworkPolicyPort,
  NetworkPolicySpec,
} from 'kubernetes-types/networking/v1.js';
import type { KVCacheBackend } from '../../api/types.ts';
import type { KubeObject } from '../../kube/object.ts';
import {
  groupDisk,
  managedConnection,
  metadataReplicated,
  resolveEtcd,
} from '../../vocabulary/backend-spec.ts';
import {
  backendName,
  backendSelector,
  childMetadata,
  componentLabel,
  etcdClientPort,
  etcdComponent,
  etcdMetricsPort,
  etcdName,
  etcdPeerPort,
  instanceLabel,
  leaderAdminPort,
  leaderComponent,
  leaderName,
  leaderProbePort,
  leaderRpcPort,
  memberComponent,
  memberRbacComponent,
  memberTierStatusPort,
  nameLabel,
} from '../../vocabulary/store-objects.ts';

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
/** The label the API server sets on every namespace, naming it. */
export const namespaceNameLabel = 'kubernetes.io/metadata.name';

/** The operator's Pods: its namespace, where every child of a store lives, and the labels the chart sets. */
export interface OperatorSelector {
  namespace: string;
  podLabels: Record<string, string>;
}

const tcp = (port: number, endPort?: number): NetworkPolicyPort => ({
  protocol: 'TCP',
  port,
  ...(endPort ? { endPort } : {}),
});

/** Every Pod in the namespaces named; none when there are none (`In` takes no empty list). */
function boundPeers(namespaces: readonly string[]): NetworkPolicyPeer[] {
  const values = [...new Set(namespaces)].sort();
  if (values.length === 0) return [];
  return [{ namespaceSelector: { matchExpressions: [{ key: namespaceNameLabel, operator: 'In', values }] } }];
}

/** The store's own Pods, in the policy's namespace: members register with the master and reach each other. */
function storePeer(backend: KVCacheBackend): NetworkPolicyPeer {
  return {
    podSelector: { matchLabels: { [nameLabel]: 'kv-cache-backend', [instanceLabel]: backendName(backend) } },
  };
}

function operatorPeer(operator: OperatorSelector): NetworkPolicyPeer {
  return {
    namespaceSelector: { matchLabels: { [namespaceNameLabel]: operator.namespace } },
    podSelector: { matchLabels: operator.podLabels },
  };
}

function policy(
  backend: KVCacheBackend,
  namespace: string,
  name: string,
  component: string,
  spec: NetworkPolicySpec,
): KubeObject<NetworkPolicy> {
  return {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: childMetadata(backend, namespace, name, component),
    spec,
  };
}

/**
 * The store's NetworkPolicies, in the operator's namespace. Ingress to the leader: the RPC port from
 * the bound namespaces and the store's own Pods, the admin port (metrics and the admin API, which
 * writes) from the operator's Pods. Ingress to the members: the transfer ports from the bound
 * namespaces and the store's own Pods, and a tier member's status port (GET /tier, read-only) from the
 * operator's Pods. A tier cleanup Pod: nothing in or out. Ports not named (the
 * leader's probe and metrics ports, a member's REST port) admit no Pod; the kubelet's probes from the
 * Pod's own node are not governed by NetworkPolicy. Host-network members are outside any policy.
 */
export function storeNetworkPolicies(
  backend: KVCacheBackend,
  boundNamespaces: readonly string[],
  operator: OperatorSelector,
): KubeObject<NetworkPolicy>[] {
  const name = backendName(backend);
  const ns = operator.namespace;
  const clients = [...boundPeers(boundNamespaces), storePeer(backend)];
  const groups = managedConnection(backend).members.map((_, i) => memberComponent(i));
  const tierPorts = managedConnection(backend).members.flatMap((g, i) =>
    groupDisk(g) ? [tcp(memberTierStatusPort(i))] : [],
  );
  return [
    policy(backend, ns, leaderName(backend), leaderComponent, {
      podSelector: { matchLabels: backendSelector(name, leaderComponent) },
      policyTypes: ['Ingress'],
      ingress: [
        { from: clients, ports: [tcp(leaderRpcPort)] },
        // With an etcd election the operator asks a leader to hand over on its probe port.
        {
          from: [operatorPeer(operator)],
          ports: [tcp(leaderAdminPort), ...(metadataReplicated(backend) ? [tcp(leaderProbePort)] : [])],
        },
      ],
    }),
    policy(backend, ns, `${name}-member`, memberRbacComponent, {
      podSelector: {
        matchLabels: { [nameLabel]: 'kv-cache-backend', [instanceLabel]: name },
        matchExpressions: [{ key: componentLabel, operator: 'In', values: groups }],
      },
      policyTypes: ['Ingress'],
      ingress: [
        { from: clients, ports: transferPortRanges.map((r) => tcp(r.first, r.last)) },
        ...(tierPorts.length ? [{ from: [operatorPeer(operator)], ports: tierPorts }] : []),
      ],
    }),
    policy(backend, ns, `${name}-${tierCleanupComponent}`, tierCleanupComponent, {
      podSelector: { matchLabels: backendSelector(name, tierCleanupComponent) },
      policyTypes: ['Ingress', 'Egress'],
    }),
    ...(metadataReplicated(backend) && resolveEtcd(backend).managed ? [etcdPolicy(backend, operator)] : []),
  ];
}

/**
 * The store's etcd holds its whole index: its client port admits this store's leader Pods alone (which
 * also need its client certificate), its peer port the other members, its plain health and metrics
 * port the operator.
 */
function etcdPolicy(backend: KVCacheBackend, operator: OperatorSelector): KubeObject<NetworkPolicy> {
  const name = backendName(backend);
  const own = (component: string) => ({ podSelector: { matchLabels: backendSelector(name, component) } });
  return policy(backend, operator.namespace, etcdName(backend), etcdComponent, {
    podSelector: { matchLabels: backendSelector(name, etcdComponent) },
    policyTypes: ['Ingress'],
    ingress: [
      { from: [own(leaderComponent)], ports: [tcp(etcdClientPort)] },
      { from: [own(etcdComponent)], ports: [tcp(etcdPeerPort)] },
      { from: [operatorPeer(operator)], ports: [tcp(etcdMetricsPort)] },
    ],
  });
}
