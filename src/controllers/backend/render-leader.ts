// The leader's children: the Deployment, the Service engines dial and the Service the operator reads.

import type { Deployment } from 'kubernetes-types/apps/v1.js';
import type { Container, EnvVar, PodSpec, Service, Volume } from 'kubernetes-types/core/v1.js';
import type { KVCacheBackend } from '../../api/types.ts';
import { leaseTimingFlags } from '../../kube/lease-timing.ts';
import type { KubeObject } from '../../kube/object.ts';
import {
  anyDiskTier,
  electionOf,
  electionOn,
  leaseElection,
  leaseTimings,
  type ManagedConnection,
  managedConnection,
  metadataReplicated,
  resolveEtcd,
  resolveImages,
  storePullSecrets,
  tenancyOn,
  tierWritesThrough,
} from '../../vocabulary/backend-spec.ts';
import { podPlacement } from '../../vocabulary/placement.ts';
import {
  adminServiceName,
  backendLabels,
  backendName,
  backendSelector,
  childMetadata,
  etcdClientTlsDir,
  etcdSecretName,
  leaderAdminPort,
  leaderComponent,
  leaderMetricsPort,
  leaderName,
  leaderProbePort,
  leaderRpcPort,
  policyKey,
  seedConfigMapName,
  storeClusterId,
} from '../../vocabulary/store-objects.ts';
import { podSpecHash, podSpecHashAnnotation } from './pod-spec-hash.ts';
import type { BackendRenderContext } from './render-context.ts';
import { etcdLeaderFlags } from './render-etcd.ts';
import { leaderResources, scratchMount, scratchVolume, storeSecurityContext } from './render-hardening.ts';

const policyDir = '/var/lib/mooncake';
const policyFile = `${policyDir}/tenant-quota-policy.yaml`;
const policySeedDir = '/etc/mooncake/tenant-quota-policy';
const policySeedFile = `${policySeedDir}/${policyKey}`;
const maxInt32 = 2147483647;

type Leader = ManagedConnection['leader'];

/** The leader's resources: the defaults, each overridden by leader.resources where it names one. */
function leaderContainerResources(leader: Leader) {
  const r = leader.resources;
  return {
    requests: { ...leaderResources.requests, ...r?.requests },
    limits: { ...leaderResources.limits, ...r?.limits },
  };
}

/** Leader replicas: an override (the two-step HA raise), else 1 without an election, else leader.replicas. */
export function leaderReplicas(backend: KVCacheBackend, ctx: BackendRenderContext): number {
  if (ctx.leaderReplicasOverride !== undefined) return ctx.leaderReplicasOverride;
  return electionOn(backend) ? (managedConnection(backend).leader.replicas ?? 1) : 1;
}

/** The flags handed through to mooncake_master, in the spec's order. */
function masterFlags(backend: KVCacheBackend, leader: Leader, namespace: string): string[] {
  return [
    `-rpc_port=${leaderRpcPort}`,
    `-metrics_port=${leaderAdminPort}`,
    // Degrade, never fail: a read outlives any stall, and a stalled member keeps its keys (decision 28).
    '-default_kv_lease_ttl=5m',
    '-client_ttl=60',
    '-rpc_address=$(KUBERNETES_POD_IP)',
    '-metrics_host=$(KUBERNETES_POD_IP)',
    `-allocation_strategy=${leader.allocationStrategy === 'Random' ? 'random' : 'free_ratio_first'}`,
    ...(tenancyOn(backend)
      ? ['-enable_multi_tenants=true', `-tenant_quota_connector_uri=${policyFile}`]
      : []),
    ...(anyDiskTier(backend)
      ? ['-enable_offload=true', `-offload_on_evict=${tierWritesThrough(backend) ? 'false' : 'true'}`]
      : []),
    // Every replica runs a master: the serving one writes the OpLog to etcd, the standbys follow it.
    ...(metadataReplicated(backend)
      ? [...etcdLeaderFlags(backend, namespace).master, `-cluster_id=${storeClusterId(backend, namespace)}`]
      : []),
    ...(leader.extraArgs ?? []),
  ];
}

/** kvpool-store's own flags (election, probe, policy seeding), then `--` and the master's. */
function leaderArgs(backend: KVCacheBackend, ctx: BackendRenderContext): string[] {
  const leader = managedConnection(backend).leader;
  const lease = leaseElection(backend);
  // Without an election the Lease flags do nothing, but were always rendered: dropping them would
  // restart every such leader (and empty its cache) on an operator upgrade.
  const leaseFlags = !metadataReplicated(backend);
  return [
    'leader',
    `--election=${electionOf(backend)}`,
    ...(leaseFlags ? [`--lease=${ctx.namespace}/${leaderName(backend)}`] : []),
    `--probe-port=${leaderProbePort}`,
    `--metrics-port=${leaderMetricsPort}`,
    ...(leaseFlags ? leaseTimingFlags(leaseTimings(backend)) : []),
    ...(metadataReplicated(backend)
      ? [`--etcd-tls-dir=${etcdClientTlsDir}`, ...etcdLeaderFlags(backend, ctx.namespace).tunnels]
      : []),
    ...(tenancyOn(backend) ? [`--policy-seed=${policySeedFile}`, `--policy-file=${policyFile}`] : []),
    // The mounted seed lags the API by up to the kubelet's sync period: a replica that wins reads the API.
    ...(tenancyOn(backend) && lease
      ? [`--policy-seed-configmap=${ctx.namespace}/${seedConfigMapName(backendName(backend))}`]
      : []),
    '--',
    ...masterFlags(backend, leader, ctx.namespace),
  ];
}

function fieldEnv(name: string, fieldPath: string) {
  return { name, valueFrom: { fieldRef: { fieldPath } } };
}

function leaderEnv(leader: Leader): EnvVar[] {
  return [
    fieldEnv('KUBERNETES_POD_NAME', 'metadata.name'),
    fieldEnv('KUBERNETES_POD_NAMESPACE', 'metadata.namespace'),
    fieldEnv('KUBERNETES_POD_IP', 'status.podIP'),
    ...(leader.extraEnv ?? []),
  ];
}

function leaderContainer(backend: KVCacheBackend, ctx: BackendRenderContext): Container {
  const leader = managedConnection(backend).leader;
  const images = resolveImages(backend, ctx.defaultImage);
  const tenancy = tenancyOn(backend);
  return {
    name: 'leader',
    image: images.leader,
    imagePullPolicy: images.pullPolicy,
    command: ['kvpool-store'],
    args: leaderArgs(backend, ctx),
    env: leaderEnv(leader),
    ports: [
      { name: 'rpc', containerPort: leaderRpcPort, protocol: 'TCP' },
      { name: 'admin', containerPort: leaderAdminPort, protocol: 'TCP' },
      { name: 'probe', containerPort: leaderProbePort, protocol: 'TCP' },
      { name: 'metrics', containerPort: leaderMetricsPort, protocol: 'TCP' },
    ],
    // Ready only while serving, so the Service resolves to the elected leader alone.
    readinessProbe: {
      httpGet: { path: '/readyz', port: 'probe' },
      periodSeconds: 1,
      failureThreshold: 1,
      timeoutSeconds: 1,
    },
    livenessProbe: { httpGet: { path: '/healthz', port: 'probe' }, periodSeconds: 10, failureThreshold: 6 },
    resources: leaderContainerResources(managedConnection(backend).leader),
    securityContext: storeSecurityContext([]),
    volumeMounts: [
      scratchMount,
      ...(metadataReplicated(backend)
        ? [{ name: 'etcd-client', mountPath: etcdClientTlsDir, readOnly: true }]
        : []),
      ...(tenancy
        ? [
            // Writable: the store renames temporary files over the policy.
            { name: 'tenant-quota-policy', mountPath: policyDir },
            { name: 'tenant-quota-policy-seed', mountPath: policySeedDir, readOnly: true },
          ]
        : []),
    ],
    terminationMessagePolicy: 'FallbackToLogsOnError',
  };
}

function policyVolumes(backend: KVCacheBackend): Volume[] {
  return [
    { name: 'tenant-quota-policy', emptyDir: {} },
    {
      name: 'tenant-quota-policy-seed',
      // Optional: the pool reconciler writes the ConfigMap; an absent one seeds an empty ledger. With an
      // election it stands in only when the API cannot be read (decision 46).
      configMap: { name: seedConfigMapName(backendName(backend)), optional: true, defaultMode: 0o644 },
    },
  ];
}

/** The masters' etcd client certificate: the operator's, or the one an external etcd's Secret holds. */
function etcdClientVolume(backend: KVCacheBackend): Volume {
  const external = resolveEtcd(backend).external;
  if (external)
    return { name: 'etcd-client', secret: { secretName: external.clientSecretName, defaultMode: 0o440 } };
  return {
    name: 'etcd-client',
    secret: {
      secretName: etcdSecretName(backend),
      defaultMode: 0o440,
      // The client certificate only; etcd's serving key stays out of the leader Pods.
      items: [
        { key: 'ca.crt', path: 'ca.crt' },
        { key: 'client.crt', path: 'tls.crt' },
        { key: 'client.key', path: 'tls.key' },
      ],
    },
  };
}

function leaderPodSpec(backend: KVCacheBackend, ctx: BackendRenderContext): PodSpec {
  const election = electionOn(backend);
  // Only the Lease election talks to the API server; etcd's masters need no account.
  const account = leaseElection(backend);
  return {
    ...podPlacement(managedConnection(backend).leader),
    automountServiceAccountToken: account,
    ...(account ? { serviceAccountName: leaderName(backend) } : {}),
    ...storePullSecrets(backend, ctx.pullSecrets),
    // Independent of the replica count, so scaling is no template change. One replica per node where
    // nodes allow: a node lost takes one replica, not the standbys too.
    ...(election
      ? {
          topologySpreadConstraints: [
            {
              maxSkew: 1,
              topologyKey: 'kubernetes.io/hostname',
              whenUnsatisfiable: 'DoNotSchedule',
              labelSelector: { matchLabels: backendSelector(backendName(backend), leaderComponent) },
              matchLabelKeys: ['pod-template-hash'],
              nodeTaintsPolicy: 'Honor',
            },
          ],
        }
      : {}),
    containers: [leaderContainer(backend, ctx)],
    volumes: [
      scratchVolume,
      ...(metadataReplicated(backend) ? [etcdClientVolume(backend)] : []),
      ...(tenancyOn(backend) ? policyVolumes(backend) : []),
    ],
  };
}

/**
 * With an election, a rollout hands over once: new replicas start beside the serving leader (old
 * standbys go first), and the operator asks the old leader to step down once they run (it is the
 * Deployment's only available replica, so the Deployment never removes it itself). Without an
 * election, or while a template without one is replaced, two masters must never overlap: Recreate.
 * See docs/decisions/0022-rollouts-that-keep-the-cache.md.
 */
function leaderStrategy(backend: KVCacheBackend, ctx: BackendRenderContext, replicas: number) {
  if (!electionOn(backend) || ctx.leaderReplicasOverride !== undefined)
    return { strategy: { type: 'Recreate' } };
  return {
    strategy: { type: 'RollingUpdate', rollingUpdate: { maxSurge: 1, maxUnavailable: replicas - 1 } },
    // Standbys stay unready by design, so a rollout never "completes" by count.
    progressDeadlineSeconds: maxInt32,
  };
}

/** The leader Deployment `<backend>-leader`; its template carries its own fingerprint, as members' do. */
export function renderLeaderDeployment(
  backend: KVCacheBackend,
  ctx: BackendRenderContext,
): KubeObject<Deployment> {
  const name = backendName(backend);
  const replicas = leaderReplicas(backend, ctx);
  const template = {
    metadata: { labels: backendLabels(name, leaderComponent) },
    spec: leaderPodSpec(backend, ctx),
  };
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: childMetadata(backend, ctx.namespace, leaderName(backend), leaderComponent),
    spec: {
      replicas,
      selector: { matchLabels: backendSelector(name, leaderComponent) },
      ...leaderStrategy(backend, ctx, replicas),
      template: {
        metadata: { ...template.metadata, annotations: { [podSpecHashAnnotation]: podSpecHash(template) } },
        spec: template.spec,
      },
    },
  };
}

/** The leader Service `<backend>-leader`: the RPC address members and engines dial, and nothing else. */
export function renderLeaderService(backend: KVCacheBackend, ctx: BackendRenderContext): KubeObject<Service> {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: childMetadata(backend, ctx.namespace, leaderName(backend), leaderComponent),
    spec: {
      type: 'ClusterIP',
      selector: backendSelector(backendName(backend), leaderComponent),
      ports: [{ name: 'rpc', port: leaderRpcPort, targetPort: 'rpc', protocol: 'TCP' }],
    },
  };
}

/** The admin Service `<backend>-admin`: the serving leader's admin port, for the operator (NetworkPolicy). */
export function renderAdminService(backend: KVCacheBackend, ctx: BackendRenderContext): KubeObject<Service> {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: childMetadata(backend, ctx.namespace, adminServiceName(backend), leaderComponent),
    spec: {
      type: 'ClusterIP',
      selector: backendSelector(backendName(backend), leaderComponent),
      ports: [{ name: 'admin', port: leaderAdminPort, targetPort: 'admin', protocol: 'TCP' }],
    },
  };
}
