// The values a managed backend's spec resolves to once defaults and fallbacks apply.
import type { KVCacheBackendSpec, MemberGroup, TransportProtocol } from '../api/kvcache-backend.ts';
import type { KVCacheBackend } from '../api/types.ts';
import { type LeaseTimings, storeLeaseDefaults } from '../kube/lease-timing.ts';

export type ManagedConnection = NonNullable<KVCacheBackendSpec['connection']['managed']>;
export type PullPolicy = 'Always' | 'IfNotPresent' | 'Never';

export interface ResolvedImages {
  leader: string;
  members: string[];
  pullPolicy: PullPolicy;
}

/** The managed branch; rendering an external backend is a caller bug, so it throws. */
export function managedConnection(backend: KVCacheBackend): ManagedConnection {
  const managed = backend.spec.connection.managed;
  if (!managed) {
    throw new Error(
      `KVCacheBackend ${backend.metadata.name} has no spec.connection.managed; external backends have no children`,
    );
  }
  return managed;
}

export type ElectionBackend = 'Kubernetes' | 'Etcd' | 'None';

/** How the store picks its serving master: a Kubernetes Lease (the default, even at one replica), etcd, or not at all. */
export function electionOf(backend: KVCacheBackend): ElectionBackend {
  return managedConnection(backend).leader.electionBackend ?? 'Kubernetes';
}

/** Whether the store elects its serving master (Lease or etcd): standbys, rollouts that hand over. */
export function electionOn(backend: KVCacheBackend): boolean {
  return electionOf(backend) !== 'None';
}

/** Whether the election runs on the Kubernetes Lease `<name>-leader` (its account, timing and step-down). */
export function leaseElection(backend: KVCacheBackend): boolean {
  return electionOf(backend) === 'Kubernetes';
}

/** Whether the masters keep the store's metadata in etcd's OpLog, so a failover keeps every key (managed only). */
export function metadataReplicated(backend: KVCacheBackend): boolean {
  return backend.spec.connection.managed?.leader.electionBackend === 'Etcd';
}

export interface ResolvedEtcd {
  /** The etcd the operator runs, or undefined for an external one. */
  managed?: { replicas: number; storageBytes: string; storageClassName?: string };
  external?: { endpoints: string[]; clientSecretName: string };
}

/** `leader.etcd` with its defaults: 3 members of 1Gi each, run by the operator. */
export function resolveEtcd(backend: KVCacheBackend): ResolvedEtcd {
  const etcd = managedConnection(backend).leader.etcd;
  if (etcd?.external) return { external: { ...etcd.external, endpoints: [...etcd.external.endpoints] } };
  return {
    managed: {
      replicas: etcd?.replicas ?? 3,
      storageBytes: String(etcd?.storage?.size ?? '1Gi'),
      ...(etcd?.storage?.storageClassName ? { storageClassName: etcd.storage.storageClassName } : {}),
    },
  };
}

/** Whether the leader keeps a tenant ledger (multiTenancy, on by default): its policy files, seed and read right. */
export function tenancyOn(backend: KVCacheBackend): boolean {
  return managedConnection(backend).leader.multiTenancy ?? true;
}

/** Whether members read the Lease themselves (they then need an account); else they need no API access. */
export function membersReadLease(backend: KVCacheBackend): boolean {
  return leaseElection(backend) && managedConnection(backend).leader.memberAddressing === 'Lease';
}

/** A duration as the schema admits it (`250ms`, `7s`), in milliseconds. */
export function durationMs(text: string): number {
  const m = /^([0-9]+)(ms|s)$/.exec(text);
  if (!m) throw new Error(`${text} is not a duration of the form 250ms or 7s`);
  return Number(m[1]) * (m[2] === 's' ? 1000 : 1);
}

/** The store's Lease timing: `leader.leaseTiming`, each field falling back to the default. */
export function leaseTimings(backend: KVCacheBackend): LeaseTimings {
  const t = managedConnection(backend).leader.leaseTiming;
  const or = (text: string | undefined, fallback: number) => (text ? durationMs(text) : fallback);
  return {
    leaseDurationMs: or(t?.leaseDuration, storeLeaseDefaults.leaseDurationMs),
    renewDeadlineMs: or(t?.renewDeadline, storeLeaseDefaults.renewDeadlineMs),
    retryPeriodMs: or(t?.retryPeriod, storeLeaseDefaults.retryPeriodMs),
  };
}

/** The group's one local disk, if it declares a tier. */
export function groupDisk(group: MemberGroup): NonNullable<MemberGroup['localDisks']>[number] | undefined {
  return group.localDisks?.[0];
}

/** Whether any group declares a disk tier (the leader then offloads to it). */
export function anyDiskTier(backend: KVCacheBackend): boolean {
  return managedConnection(backend).members.some((g) => groupDisk(g) !== undefined);
}

/** Whether the tier takes every object as its write completes (the master's offload_on_evict off). */
export function tierWritesThrough(backend: KVCacheBackend): boolean {
  return managedConnection(backend).members.some((g) => groupDisk(g)?.offload === 'WriteThrough');
}

/** The group's protocol: its own override, else the backend's, else Auto. */
export function effectiveProtocol(backend: KVCacheBackend, group: MemberGroup): TransportProtocol {
  return group.transport?.protocol ?? backend.spec.transport?.protocol ?? 'Auto';
}

function nonBlank(value: string | undefined): string | undefined {
  return value?.trim() ? value : undefined;
}

/** Whether an image reference names a moving target: tag `latest` or no tag, and no digest. */
export function isFloatingImage(image: string): boolean {
  if (image.includes('@')) return false;
  const lastSegment = image.slice(image.lastIndexOf('/') + 1);
  const colon = lastSegment.lastIndexOf(':');
  return colon < 0 || lastSegment.slice(colon + 1) === 'latest';
}

/**
 * Images for the leader and each member group (`members[i].image` > `spec.image` > default) and the one
 * pull policy all of them use. `defaultImage` is the `kv-cache-backend-image` Setting.
 */
export function resolveImages(backend: KVCacheBackend, defaultImage: string): ResolvedImages {
  const backendImage = nonBlank(backend.spec.image) ?? nonBlank(defaultImage);
  if (!backendImage) {
    throw new Error(
      `KVCacheBackend ${backend.metadata.name} has no image: set spec.image, or the Setting kv-cache-backend-image`,
    );
  }
  const members = managedConnection(backend).members.map((g) => nonBlank(g.image) ?? backendImage);
  const pullPolicy =
    backend.spec.imagePullPolicy ?? (isFloatingImage(backendImage) ? 'Always' : 'IfNotPresent');
  return { leader: backendImage, members, pullPolicy };
}

const storeProtocols: Record<TransportProtocol, string> = {
  Auto: 'tcp',
  TCP: 'tcp',
  RDMA: 'rdma',
  EFA: 'efa',
  CANN: 'ascend',
  ROCM: 'hip',
  MUSA: 'musa',
  MACA: 'maca',
};

/** The store's spelling of an API transport protocol (what MOONCAKE_PROTOCOL and clients take). */
export function storeProtocol(protocol: TransportProtocol): string {
  return storeProtocols[protocol];
}

/** A store Pod's imagePullSecrets: the backend's own, then the operator-wide ones (the Setting), each once. */
export function storePullSecrets(backend: KVCacheBackend, operatorWide: readonly string[] = []) {
  const names = [...(backend.spec.imagePullSecrets ?? []).map((s) => s.name), ...operatorWide];
  const unique = [...new Set(names.filter(Boolean))];
  return unique.length ? { imagePullSecrets: unique.map((name) => ({ name })) } : {};
}
