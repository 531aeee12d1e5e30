// The collections the backend controller reads, and how their events map to backend keys.
import type { KVCacheBackend, KVCachePool } from '../../api/types.ts';
import type { Controller } from '../../kube/controller.ts';
import type { Informer } from '../../kube/informer.ts';
import { stepDownAnnotation } from '../../kube/leader-election.ts';
import type { KubeObject } from '../../kube/object.ts';
import { type OperatorContext, workerApiVersion } from '../context.ts';
import { componentLabel, instanceLabel, nameLabel } from './labels.ts';
import type { Pod } from './pod-view.ts';

export type Deployment = KubeObject & {
  spec?: { replicas?: number; template?: { spec?: { containers?: { args?: string[] }[] } } };
  status?: {
    replicas?: number;
    updatedReplicas?: number;
    readyReplicas?: number;
    observedGeneration?: number;
  };
};
export type EndpointSlice = KubeObject & {
  endpoints?: { addresses: string[]; conditions?: { ready?: boolean } }[];
  ports?: { name?: string; port?: number }[];
};
export type Lease = KubeObject & { spec?: { holderIdentity?: string; leaseTransitions?: number } };
export type Node = KubeObject & { spec?: { unschedulable?: boolean } };

export interface BackendInformers {
  backends: Informer<KVCacheBackend>;
  pools: Informer<KVCachePool>;
  pods: Informer<Pod>;
  deployments: Informer<Deployment>;
  daemonSets: Informer<KubeObject>;
  services: Informer<KubeObject>;
  slices: Informer<EndpointSlice>;
  leases: Informer<Lease>;
  /** Nodes, for whether a leader's node is cordoned (a drain hands leadership over first). */
  nodes: Informer<Node>;
  /** Warning events about mounts the kubelet could not make (a missing tier directory). */
  mountFailures: Informer<MountEvent>;
}

export type MountEvent = KubeObject & {
  involvedObject?: { name?: string; uid?: string };
  message?: string;
  lastTimestamp?: string;
};
export const byInvolvedUid = 'involved';

const storeSelector = `${nameLabel}=kv-cache-backend`;
export const byInstance = 'instance';
export const byBackend = 'backend';
export const byService = 'service';

const instanceOf = (o: KubeObject) => {
  const v = o.metadata.labels?.[instanceLabel];
  return v ? [v] : [];
};

export function backendInformers(ctx: OperatorContext): BackendInformers {
  const ns = ctx.namespace;
  const f = ctx.informers;
  return {
    backends: f.get<KVCacheBackend>({ apiVersion: workerApiVersion, kind: 'KVCacheBackend' }),
    pools: f.get<KVCachePool>({
      apiVersion: workerApiVersion,
      kind: 'KVCachePool',
      indexers: { [byBackend]: (p) => p.spec.backends ?? [] },
    }),
    pods: f.get<Pod>({
      apiVersion: 'v1',
      kind: 'Pod',
      namespace: ns,
      labelSelector: storeSelector,
      indexers: { [byInstance]: instanceOf },
    }),
    deployments: f.get<Deployment>({
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      namespace: ns,
      labelSelector: storeSelector,
    }),
    daemonSets: f.get({
      apiVersion: 'apps/v1',
      kind: 'DaemonSet',
      namespace: ns,
      labelSelector: storeSelector,
      indexers: { [byInstance]: instanceOf },
    }),
    services: f.get({ apiVersion: 'v1', kind: 'Service', namespace: ns, labelSelector: storeSelector }),
    slices: f.get<EndpointSlice>({
      apiVersion: 'discovery.k8s.io/v1',
      kind: 'EndpointSlice',
      namespace: ns,
      indexers: { [byService]: (s) => [s.metadata.labels?.['kubernetes.io/service-name'] ?? ''] },
    }),
    leases: f.get<Lease>({ apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', namespace: ns }),
    nodes: f.get<Node>({ apiVersion: 'v1', kind: 'Node' }),
    mountFailures: f.get<MountEvent>({
      apiVersion: 'v1',
      kind: 'Event',
      namespace: ns,
      fieldSelector: 'reason=FailedMount',
      indexers: { [byInvolvedUid]: (e) => (e.involvedObject?.uid ? [e.involvedObject.uid] : []) },
    }),
  };
}

/** `<backend>-leader` or `<backend>-admin` → `<backend>`, for objects named after the leader. */
export function leaderOwner(name: string | undefined): string[] {
  const suffix = ['-leader', '-admin'].find((s) => name?.endsWith(s));
  return name && suffix ? [name.slice(0, -suffix.length)] : [];
}

export function wireBackendWatches(controller: Controller, i: BackendInformers, ctx: OperatorContext): void {
  controller.watch(i.backends, (b) => [b.metadata.name!]);
  controller.watch(i.pools, (p, _e, old) => [
    ...new Set([...(p.spec.backends ?? []), ...(old?.spec.backends ?? [])]),
  ]);
  for (const inf of [i.pods, i.deployments, i.daemonSets, i.services] as Informer<KubeObject>[]) {
    controller.watch(inf, instanceOf);
  }
  controller.watch(i.slices, (s) => leaderOwner(s.metadata.labels?.['kubernetes.io/service-name']));
  controller.watch(i.mountFailures, (e) => {
    const pod = i.pods.list().find((p) => p.metadata.uid === e.involvedObject?.uid);
    return pod ? instanceOf(pod) : [];
  });
  controller.watch(i.leases, (l, event, old) =>
    event === 'update' &&
    old?.spec?.holderIdentity === l.spec?.holderIdentity &&
    old?.metadata.annotations?.[stepDownAnnotation] === l.metadata.annotations?.[stepDownAnnotation]
      ? []
      : leaderOwner(l.metadata.name),
  );
  // A cordoned (or uncordoned) node concerns the backends whose leader Pods run there.
  controller.watch(i.nodes, (n, event, old) => {
    if (event === 'update' && Boolean(old?.spec?.unschedulable) === Boolean(n.spec?.unschedulable)) return [];
    const leaders = i.pods
      .list()
      .filter(
        (p) => p.spec?.nodeName === n.metadata.name && p.metadata.labels?.[componentLabel] === 'leader',
      );
    return [...new Set(leaders.flatMap(instanceOf))];
  });
  // A changed default image reaches every backend that relies on it.
  controller.watch(ctx.settings.informer, (s) =>
    s.metadata.name === 'kv-cache-backend-image' ? i.backends.list().map((b) => b.metadata.name!) : [],
  );
}
