// The etcd a store with replicated metadata keeps its OpLog in (electionBackend Etcd, decision 50): a
// StatefulSet of 1, 3 or 5 members with a volume each, TLS between members and to the masters, and a
// headless Service that names each member. The store image carries the etcd binary. Pure.
import type { StatefulSet } from 'kubernetes-types/apps/v1.js';
import type { Container, Service } from 'kubernetes-types/core/v1.js';
import type { KVCacheBackend } from '../../api/types.ts';
import type { KubeObject } from '../../kube/object.ts';
import {
  managedConnection,
  metadataReplicated,
  resolveEtcd,
  resolveImages,
  storePullSecrets,
} from '../../vocabulary/backend-spec.ts';
import { podPlacement } from '../../vocabulary/placement.ts';
import { parseQuantityBytes } from '../../vocabulary/quantity.ts';
import {
  backendLabels,
  backendName,
  backendSelector,
  childMetadata,
  etcdClientPort,
  etcdComponent,
  etcdMetricsPort,
  etcdName,
  etcdPeerPort,
  etcdSecretName,
  etcdTunnelBasePort,
} from '../../vocabulary/store-objects.ts';
import { podSpecHash, podSpecHashAnnotation } from './pod-spec-hash.ts';
import type { BackendRenderContext } from './render-context.ts';
import { storeSecurityContext, storeUser } from './render-hardening.ts';

const dataDir = '/var/lib/etcd';
const tlsDir = '/etc/etcd/tls';

/** `<member>.<service>.<namespace>.svc`: the name a member is reached by, and its certificate covers. */
function memberHost(backend: KVCacheBackend, namespace: string, i: number): string {
  return `${etcdName(backend)}-${i}.${etcdName(backend)}.${namespace}.svc`;
}

/** The DNS names the members' serving certificate covers. */
export function etcdServerHosts(backend: KVCacheBackend, namespace: string): string[] {
  const service = `${etcdName(backend)}.${namespace}.svc`;
  return [`*.${service}`, `*.${service}.cluster.local`, service, 'localhost', '127.0.0.1'];
}

/** The https endpoints the masters dial: the members the operator runs, or the external ones. */
export function etcdEndpoints(backend: KVCacheBackend, namespace: string): string[] {
  const etcd = resolveEtcd(backend);
  if (etcd.external) return etcd.external.endpoints;
  return Array.from(
    { length: etcd.managed!.replicas },
    (_, i) => `https://${memberHost(backend, namespace, i)}:${etcdClientPort}`,
  );
}

/** kvpool-store's tunnels (`<local port>=<endpoint>`) and the master flags that use them. */
export function etcdLeaderFlags(backend: KVCacheBackend, namespace: string) {
  const endpoints = etcdEndpoints(backend, namespace);
  const local = endpoints.map((_, i) => `127.0.0.1:${etcdTunnelBasePort + i}`);
  return {
    tunnels: endpoints.map((e, i) => `--etcd-tunnel=${etcdTunnelBasePort + i}=${e}`),
    master: ['-enable_ha=true', '-enable_oplog=true', `-etcd_endpoints=${local.join(';')}`],
  };
}

function etcdArgs(
  backend: KVCacheBackend,
  namespace: string,
  replicas: number,
  quotaBytes: bigint,
): string[] {
  const self = `$(POD_NAME).${etcdName(backend)}.${namespace}.svc`;
  const peers = Array.from(
    { length: replicas },
    (_, i) => `${etcdName(backend)}-${i}=https://${memberHost(backend, namespace, i)}:${etcdPeerPort}`,
  );
  return [
    '--name=$(POD_NAME)',
    `--data-dir=${dataDir}/data`,
    `--listen-client-urls=https://0.0.0.0:${etcdClientPort}`,
    `--advertise-client-urls=https://${self}:${etcdClientPort}`,
    `--listen-peer-urls=https://0.0.0.0:${etcdPeerPort}`,
    `--initial-advertise-peer-urls=https://${self}:${etcdPeerPort}`,
    `--initial-cluster=${peers.join(',')}`,
    // Read only when the data directory is empty: a member that restarts keeps its identity.
    '--initial-cluster-state=new',
    `--initial-cluster-token=${namespace}.${etcdName(backend)}`,
    `--listen-metrics-urls=http://0.0.0.0:${etcdMetricsPort}`,
    `--cert-file=${tlsDir}/tls.crt`,
    `--key-file=${tlsDir}/tls.key`,
    `--trusted-ca-file=${tlsDir}/ca.crt`,
    '--client-cert-auth=true',
    `--peer-cert-file=${tlsDir}/tls.crt`,
    `--peer-key-file=${tlsDir}/tls.key`,
    // A client certificate without names: etcd checks a peer's names against its address otherwise.
    `--peer-client-cert-file=${tlsDir}/peer-client.crt`,
    `--peer-client-key-file=${tlsDir}/peer-client.key`,
    `--peer-trusted-ca-file=${tlsDir}/ca.crt`,
    '--peer-client-cert-auth=true',
    // History is compacted every 5 minutes; the space quota leaves a fifth of the volume for the WAL.
    '--auto-compaction-mode=periodic',
    '--auto-compaction-retention=5m',
    `--quota-backend-bytes=${quotaBytes}`,
    '--log-level=warn',
  ];
}

function etcdContainer(
  backend: KVCacheBackend,
  ctx: BackendRenderContext,
  replicas: number,
  sizeBytes: bigint,
) {
  const images = resolveImages(backend, ctx.defaultImage);
  const container: Container = {
    name: 'etcd',
    image: images.leader,
    imagePullPolicy: images.pullPolicy,
    command: ['etcd'],
    args: etcdArgs(backend, ctx.namespace, replicas, (sizeBytes * 4n) / 5n),
    env: [{ name: 'POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } }],
    ports: [
      { name: 'client', containerPort: etcdClientPort, protocol: 'TCP' },
      { name: 'peer', containerPort: etcdPeerPort, protocol: 'TCP' },
      { name: 'metrics', containerPort: etcdMetricsPort, protocol: 'TCP' },
    ],
    // Ready once it serves reads with a quorum behind it; alive while its loop answers.
    readinessProbe: { httpGet: { path: '/readyz', port: 'metrics' }, periodSeconds: 2, failureThreshold: 2 },
    livenessProbe: {
      httpGet: { path: '/livez', port: 'metrics' },
      initialDelaySeconds: 10,
      periodSeconds: 10,
      failureThreshold: 6,
    },
    resources: { requests: { cpu: '100m', memory: '128Mi' }, limits: { memory: '1Gi' } },
    securityContext: storeSecurityContext([]),
    volumeMounts: [
      { name: 'data', mountPath: dataDir },
      { name: 'tls', mountPath: tlsDir, readOnly: true },
    ],
    terminationMessagePolicy: 'FallbackToLogsOnError',
  };
  return container;
}

/** The headless Service that gives each member its name, published before it is ready (peers must meet). */
export function renderEtcdService(backend: KVCacheBackend, ctx: BackendRenderContext): KubeObject<Service> {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: childMetadata(backend, ctx.namespace, etcdName(backend), etcdComponent),
    spec: {
      clusterIP: 'None',
      publishNotReadyAddresses: true,
      selector: backendSelector(backendName(backend), etcdComponent),
      ports: [
        { name: 'client', port: etcdClientPort, targetPort: 'client', protocol: 'TCP' },
        { name: 'peer', port: etcdPeerPort, targetPort: 'peer', protocol: 'TCP' },
      ],
    },
  };
}

/** The etcd StatefulSet, or undefined when the store replicates nothing or uses an external etcd. */
export function renderEtcdStatefulSet(
  backend: KVCacheBackend,
  ctx: BackendRenderContext,
): KubeObject<StatefulSet> | undefined {
  const managed = metadataReplicated(backend) ? resolveEtcd(backend).managed : undefined;
  if (!managed) return undefined;
  const name = backendName(backend);
  const sizeBytes = parseQuantityBytes(managed.storageBytes);
  const template = {
    metadata: { labels: backendLabels(name, etcdComponent) },
    spec: {
      // etcd goes where the leaders may go.
      ...podPlacement(managedConnection(backend).leader),
      automountServiceAccountToken: false,
      ...storePullSecrets(backend, ctx.pullSecrets),
      // The volume is writable by the store image's group.
      securityContext: { fsGroup: storeUser },
      // One member per node where nodes allow, so a node lost costs one member, not the quorum.
      topologySpreadConstraints: [
        {
          maxSkew: 1,
          topologyKey: 'kubernetes.io/hostname',
          whenUnsatisfiable: 'ScheduleAnyway' as const,
          labelSelector: { matchLabels: backendSelector(name, etcdComponent) },
        },
      ],
      containers: [etcdContainer(backend, ctx, managed.replicas, sizeBytes)],
      volumes: [
        {
          name: 'tls',
          secret: {
            secretName: etcdSecretName(backend),
            defaultMode: 0o440,
            // etcd's own certificates only; the masters' client key stays out of its Pods.
            items: [
              { key: 'ca.crt', path: 'ca.crt' },
              { key: 'server.crt', path: 'tls.crt' },
              { key: 'server.key', path: 'tls.key' },
              { key: 'peer-client.crt', path: 'peer-client.crt' },
              { key: 'peer-client.key', path: 'peer-client.key' },
            ],
          },
        },
      ],
    },
  };
  return {
    apiVersion: 'apps/v1',
    kind: 'StatefulSet',
    metadata: childMetadata(backend, ctx.namespace, etcdName(backend), etcdComponent),
    spec: {
      serviceName: etcdName(backend),
      replicas: managed.replicas,
      // Every member starts at once: the first cannot serve until a quorum has met.
      podManagementPolicy: 'Parallel',
      selector: { matchLabels: backendSelector(name, etcdComponent) },
      persistentVolumeClaimRetentionPolicy: { whenDeleted: 'Delete', whenScaled: 'Retain' },
      template: {
        metadata: { ...template.metadata, annotations: { [podSpecHashAnnotation]: podSpecHash(template) } },
        spec: template.spec,
      },
      volumeClaimTemplates: [
        {
          metadata: { name: 'data', labels: backendLabels(name, etcdComponent) },
          spec: {
            accessModes: ['ReadWriteOnce'],
            resources: { requests: { storage: managed.storageBytes } },
            ...(managed.storageClassName ? { storageClassName: managed.storageClassName } : {}),
          },
        },
      ],
    },
  };
}
