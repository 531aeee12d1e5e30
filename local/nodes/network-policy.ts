// The local cluster's NetworkPolicy enforcer: kube-router with its firewall controller alone, one per
// node in the node's network namespace (as kube-proxy runs), programming iptables and ipset there.
// Routing and the service proxy stay off: the CNI bridge routes Pods and kube-proxy serves Services.
// Why kube-router, and what it enforces here: docs/decisions/0038-network-policy-enforcement-in-the-local-cluster.md.
import type { ClusterRole, ClusterRoleBinding } from 'kubernetes-types/rbac/v1.js';
import type { KubeObject } from '../../src/kube/object.ts';

/** The user the enforcer's client certificate names. */
export const enforcerUser = 'system:kvpool-local:network-policy';
/** The chain kube-router jumps to from FORWARD; present once its controller has set itself up. */
export const enforcerForwardChain = 'KUBE-ROUTER-FORWARD';
/** Where each node's enforcer answers /healthz (in the node's own network namespace). */
export const enforcerHealthPort = 20244;

/** kube-router's arguments on one node: the firewall controller alone, against the API server. */
export function enforcerArgs(node: { name: string; kubeconfig: string }, serviceCidr: string): string[] {
  return [
    `--kubeconfig=${node.kubeconfig}`,
    `--hostname-override=${node.name}`,
    '--run-firewall=true',
    '--run-router=false',
    '--run-service-proxy=false',
    '--run-loadbalancer=false',
    // Traffic to Service addresses is left to kube-proxy, as on a cluster whose proxy is separate.
    `--service-cluster-ip-range=${serviceCidr}`,
    `--health-port=${enforcerHealthPort}`,
    '--metrics-port=0',
    '--v=1',
  ];
}

/** What the enforcer reads (its informers start on every one of these kinds), and nothing it writes. */
export function enforcerRbac(): KubeObject<ClusterRole | ClusterRoleBinding>[] {
  const name = 'kvpool-local:network-policy';
  const read = ['get', 'list', 'watch'];
  return [
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: { name },
      rules: [
        { apiGroups: [''], resources: ['pods', 'namespaces', 'nodes', 'services', 'endpoints'], verbs: read },
        { apiGroups: ['discovery.k8s.io'], resources: ['endpointslices'], verbs: read },
        { apiGroups: ['networking.k8s.io'], resources: ['networkpolicies'], verbs: read },
      ],
    },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name },
      subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: enforcerUser }],
    },
  ];
}
