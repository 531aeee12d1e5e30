// One member DaemonSet per group: each Pod mounts one memory segment (and optionally a disk tier).

import type { DaemonSet } from 'kubernetes-types/apps/v1.js';
import type { Container, EnvVar, PodSpec, Volume, VolumeMount } from 'kubernetes-types/core/v1.js';
import type { MemberGroup } from '../../api/kvcache-backend.ts';
import type { KVCacheBackend } from '../../api/types.ts';
import type { KubeObject } from '../../kube/object.ts';
import {
  effectiveProtocol,
  groupDisk,
  managedConnection,
  membersReadLease,
  resolveImages,
  storeProtocol,
  storePullSecrets,
} from '../../vocabulary/backend-spec.ts';
import { visibleDeviceVars } from '../../vocabulary/member-env.ts';
import { podPlacement, schedulingFields } from '../../vocabulary/placement.ts';
import { parseQuantityBytes } from '../../vocabulary/quantity.ts';
import {
  backendLabels,
  backendName,
  backendSelector,
  childMetadata,
  leaderName,
  leaderRpcPort,
  memberAccountName,
  memberComponent,
  memberDaemonSetName,
  memberTierStatusPort,
} from '../../vocabulary/store-objects.ts';
import { podSpecHash, podSpecHashAnnotation } from './pod-spec-hash.ts';
import type { BackendRenderContext } from './render-context.ts';
import {
  bytesOf,
  effectiveUser,
  memberResources,
  scratchMount,
  scratchVolume,
  sortedKeys,
  storeDefaultLocalBufferBytes,
  storeOffloadBufferBytes,
  storeSecurityContext,
} from './render-hardening.ts';
import {
  localDiskVolume,
  surveyContainer,
  type TierOwner,
  tierEnv,
  tierVolume,
  unmountHook,
} from './render-tier.ts';

export const memberBasePort = 8080;
// Member shutdown budget, on top of the tier's scale-in grace.
const memberShutdownSeconds = 60;

function memberPort(index: number): number {
  return memberBasePort + index;
}

/** The address members reach the leader by: the Lease itself, or the Service. */
export function memberMasterAddress(backend: KVCacheBackend, namespace: string): string {
  const viaLease = membersReadLease(backend);
  const leader = leaderName(backend);
  return viaLease ? `k8s://${namespace}/${leader}` : `${leader}.${namespace}.svc:${leaderRpcPort}`;
}

function memberArgs(group: MemberGroup, index: number): string[] {
  return [
    'member',
    // The tier's status (decision 39): what the store's master does not report of a full tier.
    ...(groupDisk(group) ? [`--tier-status-port=${memberTierStatusPort(index)}`] : []),
    '--',
    ...(index > 0 ? ['--port', String(memberPort(index))] : []),
    ...(group.extraArgs ?? []).flatMap((arg) => ['-D', arg.replace(/^-+/, '')]),
  ];
}

/** How long a member's calls to its master may take before it gives up on that connection. */
export const memberRpcTimeoutMs = 2000;

function memberEnv(backend: KVCacheBackend, group: MemberGroup, ctx: BackendRenderContext): EnvVar[] {
  const buffer = parseQuantityBytes(group.localBufferSize ?? 0);
  const disk = groupDisk(group);
  return [
    { name: 'MOONCAKE_TE_META_DATA_SERVER', value: 'P2PHANDSHAKE' },
    { name: 'MOONCAKE_MASTER', value: memberMasterAddress(backend, ctx.namespace) },
    { name: 'MOONCAKE_PROTOCOL', value: storeProtocol(effectiveProtocol(backend, group)) },
    { name: 'MOONCAKE_LOCAL_HOSTNAME', valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } },
    // kvpool-store reads the Lease in its own namespace when members address the leader by Lease.
    { name: 'KUBERNETES_POD_NAMESPACE', valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } } },
    { name: 'MC_TE_METRIC', value: '1' },
    // A member's master client waits 30 s by default on a master that vanished without closing its
    // connections (a SIGKILLed or deleted leader Pod): three pings at that timeout before it remounts
    // on the new one. Its calls are pings, mounts and tier heartbeats: 2 s is ample (decision 50).
    { name: 'MC_RPC_TIMEOUT_MS', value: String(memberRpcTimeoutMs) },
    { name: 'MC_RPC_CONNECT_TIMEOUT_MS', value: String(memberRpcTimeoutMs) },
    ...(group.medium === 'DRAM' ? visibleDeviceVars.map((name) => ({ name, value: 'void' })) : []),
    { name: 'MOONCAKE_GLOBAL_SEGMENT_SIZE', value: String(parseQuantityBytes(group.capacityPerMember)) },
    ...(buffer > 0n ? [{ name: 'MOONCAKE_LOCAL_BUFFER_SIZE', value: String(buffer) }] : []),
    ...(disk ? tierEnv(disk) : []),
    ...(group.extraEnv ?? []),
  ];
}

/** Whether the group's transport needs the host's fabric (host network, locked memory, NIC devices). */
function usesHostFabric(backend: KVCacheBackend, group: MemberGroup): boolean {
  const protocol = effectiveProtocol(backend, group);
  return protocol === 'RDMA' || protocol === 'EFA';
}

function fabricLimits(backend: KVCacheBackend, group: MemberGroup): Record<string, string> | undefined {
  const count = group.fabricInterfaceCount ?? 1;
  const protocol = effectiveProtocol(backend, group);
  if (protocol === 'EFA') return { 'vpc.amazonaws.com/efa': String(count) };
  if (protocol !== 'RDMA') return undefined;
  return count === 1
    ? { 'device.gpustack.ai/rdma.shared': '1' }
    : { 'device.gpustack.ai/rdma': String(count) };
}

/** The memory a member requests: its segment when the segment is in DRAM, and its local buffer. */
function memberMemoryBytes(group: MemberGroup): bigint {
  return bytesOf(group.localBufferSize) + (group.medium === 'DRAM' ? bytesOf(group.capacityPerMember) : 0n);
}

/**
 * The store's buffers a member fills beyond its request: the local buffer when the group sets none
 * (the store then takes 1 GiB), and a disk tier's staging buffer. Without them in the limit a tier
 * member is killed for memory as it starts (seen on real nodes with a 64Mi segment).
 */
function storeBufferBytes(group: MemberGroup): bigint {
  const defaultBuffer = bytesOf(group.localBufferSize) === 0n ? storeDefaultLocalBufferBytes : 0n;
  return defaultBuffer + (groupDisk(group) ? storeOffloadBufferBytes : 0n);
}

/** The fabric's capabilities: locked memory for registering the segment with the NIC. */
function fabricCapabilities(backend: KVCacheBackend, group: MemberGroup): string[] {
  return usesHostFabric(backend, group) ? ['IPC_LOCK', 'SYS_RESOURCE'] : [];
}

function memberVolumes(group: MemberGroup): Volume[] {
  const disk = groupDisk(group);
  return [
    scratchVolume,
    ...(disk ? [tierVolume(disk)] : []),
    ...(group.hostPaths ?? []).map((h, i) => ({
      name: `host-path-${i}`,
      hostPath: { path: h.path, ...(h.type !== undefined ? { type: h.type } : {}) },
    })),
  ];
}

function memberVolumeMounts(group: MemberGroup): VolumeMount[] {
  const disk = groupDisk(group);
  return [
    scratchMount,
    ...(disk ? [{ name: localDiskVolume, mountPath: disk.path }] : []),
    ...(group.hostPaths ?? []).map((h, i) => ({
      name: `host-path-${i}`,
      mountPath: h.mountPath,
      ...(h.readOnly !== undefined ? { readOnly: h.readOnly } : {}),
    })),
  ];
}

function memberContainer(backend: KVCacheBackend, index: number, ctx: BackendRenderContext): Container {
  const group = managedConnection(backend).members[index]!;
  const images = resolveImages(backend, ctx.defaultImage);
  const port = memberPort(index);
  return {
    name: 'member',
    image: images.members[index]!,
    imagePullPolicy: images.pullPolicy,
    command: ['kvpool-store'],
    args: memberArgs(group, index),
    env: memberEnv(backend, group, ctx),
    resources: memberResources(
      memberMemoryBytes(group),
      storeBufferBytes(group),
      fabricLimits(backend, group),
    ),
    // The REST port opens only after the segment is mounted, so Ready means mounted. Mounting a large
    // segment takes a while: liveness starts once the port first opened.
    startupProbe: { tcpSocket: { port }, periodSeconds: 5, failureThreshold: 120 },
    readinessProbe: { tcpSocket: { port }, periodSeconds: 1, failureThreshold: 3 },
    livenessProbe: { tcpSocket: { port }, periodSeconds: 10, failureThreshold: 6 },
    securityContext: storeSecurityContext(fabricCapabilities(backend, group), group.securityContext),
    volumeMounts: memberVolumeMounts(group),
    ...(groupDisk(group) ? { lifecycle: unmountHook(port, tierGraceSeconds(backend)) } : {}),
    terminationMessagePolicy: 'FallbackToLogsOnError',
  };
}

/** The user a group's member runs as, which its tier directory belongs to. */
export function memberUser(backend: KVCacheBackend, index: number): number {
  const group = managedConnection(backend).members[index]!;
  return effectiveUser(fabricCapabilities(backend, group), group.securityContext);
}

/** The identity a tier's marker carries: the backend's UID, which a re-created namesake does not share. */
function tierOwner(backend: KVCacheBackend, namespace: string): TierOwner {
  const uid = backend.metadata.uid;
  if (!uid)
    throw new Error(`KVCacheBackend ${backendName(backend)} has no metadata.uid to mark its tier with`);
  return { uid, backend: `${namespace}/${backendName(backend)}` };
}

function tierGraceSeconds(backend: KVCacheBackend): number {
  return managedConnection(backend).scaleIn?.gracePeriodSeconds ?? 0;
}

function memberPodSpec(backend: KVCacheBackend, index: number, ctx: BackendRenderContext): PodSpec {
  const group = managedConnection(backend).members[index]!;
  const readsLease = membersReadLease(backend);
  const fabric = usesHostFabric(backend, group);
  const disk = groupDisk(group);
  const images = resolveImages(backend, ctx.defaultImage);
  return {
    nodeSelector: sortedKeys(group.nodeSelector),
    ...podPlacement(group),
    // Only a member that follows the Lease talks to the API.
    automountServiceAccountToken: readsLease,
    ...(readsLease ? { serviceAccountName: memberAccountName(backend) } : {}),
    ...storePullSecrets(backend, ctx.pullSecrets),
    ...(group.runtimeClassName ? { runtimeClassName: group.runtimeClassName } : {}),
    ...(fabric ? { hostNetwork: true } : {}),
    dnsPolicy: fabric ? 'ClusterFirstWithHostNet' : 'ClusterFirst',
    terminationGracePeriodSeconds: memberShutdownSeconds + (disk ? tierGraceSeconds(backend) : 0),
    ...(disk
      ? {
          initContainers: [
            surveyContainer(
              disk,
              tierOwner(backend, ctx.namespace),
              images.members[index]!,
              images.pullPolicy,
              memberUser(backend, index),
            ),
          ],
        }
      : {}),
    containers: [memberContainer(backend, index, ctx)],
    volumes: memberVolumes(group),
  };
}

/** The DaemonSet `<backend>-member-<index>` for member group `index`. */
export function renderMemberDaemonSet(
  backend: KVCacheBackend,
  index: number,
  ctx: BackendRenderContext,
): KubeObject<DaemonSet> {
  const group = managedConnection(backend).members[index];
  if (!group) throw new Error(`KVCacheBackend ${backendName(backend)} has no members[${index}]`);
  const component = memberComponent(index);
  const template = {
    metadata: { labels: backendLabels(backendName(backend), component) },
    spec: memberPodSpec(backend, index, ctx),
  };
  // Where a member may run changes which nodes get one, never the members already running.
  const hash = podSpecHash(template, schedulingFields);
  return {
    apiVersion: 'apps/v1',
    kind: 'DaemonSet',
    metadata: childMetadata(backend, ctx.namespace, memberDaemonSetName(backend, index), component),
    spec: {
      selector: { matchLabels: backendSelector(backendName(backend), component) },
      // Pods are replaced by the operator when their pod-spec-hash moves, never by the DaemonSet itself.
      updateStrategy: { type: 'OnDelete' },
      template: {
        metadata: { ...template.metadata, annotations: { [podSpecHashAnnotation]: hash } },
        spec: template.spec,
      },
    },
  };
}
