// The objects a managed KVCacheBackend runs as: their names, ports, labels, selectors and the metadata
// every child carries.
import type { KVCacheBackend } from '../api/types.ts';
import type { KubeObject, ObjectMeta, OwnerReference } from '../kube/object.ts';

/** What a name is derived from: a backend, or only its name (admission judges names before they exist). */
type BackendRef = Pick<KVCacheBackend, 'metadata'>;

export const nameLabel = 'app.kubernetes.io/name';
export const instanceLabel = 'app.kubernetes.io/instance';
export const componentLabel = 'app.kubernetes.io/component';
export const partOfLabel = 'app.kubernetes.io/part-of';

export const leaderComponent = 'leader';
/** Names the per-backend member RBAC; never a Pod selector, so it cannot collide with `member-<i>`. */
export const memberRbacComponent = 'member';

/** The component label of member group `index`. */
export function memberComponent(index: number): string {
  return `member-${index}`;
}

/** Selector labels: name, instance and component only (part-of may change without orphaning Pods). */
export function backendSelector(backend: string, component: string): Record<string, string> {
  return {
    [nameLabel]: 'kv-cache-backend',
    [instanceLabel]: backend,
    [componentLabel]: component,
  };
}

/** Labels on objects and Pods: the selector plus part-of. */
export function backendLabels(backend: string, component: string): Record<string, string> {
  return { ...backendSelector(backend, component), [partOfLabel]: 'kvpool' };
}

/** The owner reference every child carries: the backend controls it, deletion is not blocked on it. */
export function backendOwnerReference(backend: KVCacheBackend): OwnerReference {
  return {
    apiVersion: 'worker.gpustack.ai/v1',
    kind: 'KVCacheBackend',
    name: backendName(backend),
    uid: backend.metadata.uid ?? '',
    controller: true,
    blockOwnerDeletion: false,
  };
}

/** Metadata of a child object named `name` in `namespace`, labelled for `component`. */
/** Whether `obj` carries an owner reference to this very backend (its uid, not only its name). */
export function ownedByBackend(obj: KubeObject, backend: KVCacheBackend): boolean {
  return (
    obj.metadata.ownerReferences?.some(
      (r) => r.kind === 'KVCacheBackend' && r.uid === backend.metadata.uid,
    ) ?? false
  );
}

export function childMetadata(
  backend: KVCacheBackend,
  namespace: string,
  name: string,
  component: string,
): ObjectMeta {
  return {
    name,
    namespace,
    labels: backendLabels(backendName(backend), component),
    ownerReferences: [backendOwnerReference(backend)],
  };
}

/** The backend's name; a backend read from the apiserver always has one. */
export function backendName(backend: BackendRef): string {
  const name = backend.metadata.name;
  if (!name)
    throw new Error('KVCacheBackend has no metadata.name; render only objects read from the apiserver');
  return name;
}

/** The name of the leader Deployment, Service, Lease and leader RBAC objects. */
export function leaderName(backend: BackendRef): string {
  return `${backendName(backend)}-leader`;
}

/** The name of the Service the operator reads the leader's admin port through (engines never use it). */
export function adminServiceName(backend: BackendRef): string {
  return `${backendName(backend)}-admin`;
}

/**
 * The labels of the operator's own Pods (the chart sets them): the store's NetworkPolicy admits the
 * admin port from these Pods alone.
 */
export const operatorPodLabels: Record<string, string> = {
  'app.kubernetes.io/name': 'kvpool',
  'app.kubernetes.io/component': 'operator',
};

/** The name of member group `index`'s DaemonSet. */
export function memberDaemonSetName(backend: BackendRef, index: number): string {
  return `${backendName(backend)}-member-${index}`;
}

/** `<backend>-leader` or `<backend>-admin` → `<backend>`, for objects named after the leader. */
export function leaderOwner(name: string | undefined): string[] {
  const suffix = ['-leader', '-admin'].find((s) => name?.endsWith(s));
  return name && suffix ? [name.slice(0, -suffix.length)] : [];
}

/** The ConfigMap the pool controller seeds the leader's tenant policy from, and its key. */
export function seedConfigMapName(backend: string): string {
  return `${backend}-tenant-quota-policy`;
}
export const policyKey = 'tenant-quota-policy.yaml';

/**
 * The leader's ports: RPC (engines and members), admin (metrics, segments and the ledger, which
 * writes: the operator alone), probe (kubelet), metrics (the master's /metrics alone, for scrapers).
 */
export const leaderRpcPort = 50051;
export const leaderAdminPort = 9003;
export const leaderProbePort = 9004;
export const leaderMetricsPort = 9005;

/**
 * A tier member's status port (decision 39: GET /tier, read by the operator alone), one per group as
 * members of several groups may share a host network.
 */
export function memberTierStatusPort(group: number): number {
  return 9110 + group;
}

/** The name of the per-backend member ServiceAccount, Role and RoleBinding. */
export function memberAccountName(backend: BackendRef): string {
  return `${backendName(backend)}-member`;
}

/** The store's own etcd (electionBackend Etcd): its StatefulSet, headless Service and NetworkPolicy. */
export const etcdComponent = 'etcd';
export function etcdName(backend: BackendRef): string {
  return `${backendName(backend)}-etcd`;
}
/** The etcd's CA, its members' certificates and the masters' client certificate (each side mounts its own). */
export function etcdSecretName(backend: BackendRef): string {
  return `${backendName(backend)}-etcd-tls`;
}
/** etcd's ports: clients (TLS, the masters), peers (TLS), and plain /metrics, /health and /readyz. */
export const etcdClientPort = 2379;
export const etcdPeerPort = 2380;
export const etcdMetricsPort = 2381;
/** The leader's local ends of its TLS tunnels to etcd, one port per etcd endpoint from this one up. */
export const etcdTunnelBasePort = 23790;
/** Where the leader container finds its etcd client certificate (ca.crt, tls.crt, tls.key). */
export const etcdClientTlsDir = '/etc/kvpool/etcd-client';
/** The masters' etcd namespace for this store: Mooncake's cluster_id. */
export function storeClusterId(backend: BackendRef, namespace: string): string {
  return `kvpool.${namespace}.${backendName(backend)}`;
}
