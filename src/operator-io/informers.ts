// The collections the operator reads, shared by its controllers and its admission handlers (one cache
// per collection, so what admission judges against is what the controllers act on), and the indexes
// over them.
import type { DaemonSet, Deployment } from 'kubernetes-types/apps/v1.js';
import type { Lease } from 'kubernetes-types/coordination/v1.js';
import type { ConfigMap, Event, Node, Pod, Service } from 'kubernetes-types/core/v1.js';
import type { EndpointSlice } from 'kubernetes-types/discovery/v1.js';
import type {
  InstanceType,
  KVCacheBackend,
  KVCachePool,
  KVCachePoolBinding,
  ModelDeployment,
} from '../api/types.ts';
import type { Informer } from '../kube/informer.ts';
import type { KubeObject } from '../kube/object.ts';
import { workerApiVersion } from '../vocabulary/identity.ts';
import { instanceLabel, nameLabel } from '../vocabulary/store-objects.ts';
import type { OperatorContext } from './operator-context.ts';

/** Index names. */
export const byInvolvedUid = 'involved';
export const byInstance = 'instance';
export const byBackend = 'backend';
export const byService = 'service';
export const byPool = 'pool';
export const byBindingRef = 'binding';
export const byInstanceNs = 'instance-ns';

export interface BackendInformers {
  backends: Informer<KVCacheBackend>;
  pools: Informer<KVCachePool>;
  /** Bindings, for the namespaces a store admits (and the pools' ledgers). */
  bindings: Informer<KVCachePoolBinding>;
  pods: Informer<KubeObject<Pod>>;
  deployments: Informer<KubeObject<Deployment>>;
  daemonSets: Informer<KubeObject<DaemonSet>>;
  services: Informer<KubeObject<Service>>;
  slices: Informer<KubeObject<EndpointSlice>>;
  leases: Informer<KubeObject<Lease>>;
  /** Nodes, for whether a leader's node is cordoned (a drain hands leadership over first). */
  nodes: Informer<KubeObject<Node>>;
  /** Warning events about mounts the kubelet could not make (a missing tier directory). */
  mountFailures: Informer<KubeObject<Event>>;
}

export interface PoolInformers extends BackendInformers {
  modelDeployments: Informer<ModelDeployment>;
  policies: Informer<KubeObject<ConfigMap>>;
  /** The tenant registries (`<backend>-tenant-registry`), read only at the version a pass last saw live. */
  registries: Informer<KubeObject<ConfigMap>>;
}

export interface DeploymentInformers extends PoolInformers {
  workloads: Informer<KubeObject<Deployment>>;
  engineServices: Informer<KubeObject<Service>>;
  enginePods: Informer<KubeObject<Pod>>;
  instanceTypes: Informer<InstanceType>;
  /** Nodes, for the accelerator runtime version a default image is tagged with. */
  nodes: Informer<KubeObject<Node>>;
}

const storeSelector = `${nameLabel}=kv-cache-backend`;
const engineSelector = 'app.kubernetes.io/name=model-deployment';

/** The backend a store object belongs to, by its instance label. */
export const instanceOf = (o: KubeObject) => {
  const v = o.metadata.labels?.[instanceLabel];
  return v ? [v] : [];
};

/** The `namespace/name` of the ModelDeployment an engine object belongs to. */
export const instanceNs = (o: KubeObject) => {
  const i = o.metadata.labels?.['app.kubernetes.io/instance'];
  return i ? [`${o.metadata.namespace}/${i}`] : [];
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
    bindings: f.get<KVCachePoolBinding>({
      apiVersion: workerApiVersion,
      kind: 'KVCachePoolBinding',
      indexers: { [byPool]: (b) => [b.spec.poolRef.name] },
    }),
    pods: f.get<KubeObject<Pod>>({
      apiVersion: 'v1',
      kind: 'Pod',
      namespace: ns,
      labelSelector: storeSelector,
      indexers: { [byInstance]: instanceOf },
    }),
    deployments: f.get<KubeObject<Deployment>>({
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      namespace: ns,
      labelSelector: storeSelector,
    }),
    daemonSets: f.get<KubeObject<DaemonSet>>({
      apiVersion: 'apps/v1',
      kind: 'DaemonSet',
      namespace: ns,
      labelSelector: storeSelector,
      indexers: { [byInstance]: instanceOf },
    }),
    services: f.get<KubeObject<Service>>({
      apiVersion: 'v1',
      kind: 'Service',
      namespace: ns,
      labelSelector: storeSelector,
    }),
    slices: f.get<KubeObject<EndpointSlice>>({
      apiVersion: 'discovery.k8s.io/v1',
      kind: 'EndpointSlice',
      namespace: ns,
      indexers: { [byService]: (s) => [s.metadata.labels?.['kubernetes.io/service-name'] ?? ''] },
    }),
    leases: f.get<KubeObject<Lease>>({ apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', namespace: ns }),
    nodes: f.get<KubeObject<Node>>({ apiVersion: 'v1', kind: 'Node' }),
    mountFailures: f.get<KubeObject<Event>>({
      apiVersion: 'v1',
      kind: 'Event',
      namespace: ns,
      fieldSelector: 'reason=FailedMount',
      indexers: { [byInvolvedUid]: (e) => (e.involvedObject.uid ? [e.involvedObject.uid] : []) },
    }),
  };
}

export function poolInformers(ctx: OperatorContext): PoolInformers {
  return {
    ...backendInformers(ctx),
    policies: ctx.informers.get<KubeObject<ConfigMap>>({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      namespace: ctx.namespace,
      labelSelector: 'app.kubernetes.io/component=tenant-quota-policy',
    }),
    registries: ctx.informers.get<KubeObject<ConfigMap>>({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      namespace: ctx.namespace,
      labelSelector: 'app.kubernetes.io/component=tenant-registry',
    }),
    modelDeployments: ctx.informers.get<ModelDeployment>({
      apiVersion: workerApiVersion,
      kind: 'ModelDeployment',
      indexers: {
        [byBindingRef]: (m) =>
          m.spec.kvCache ? [`${m.metadata.namespace}/${m.spec.kvCache.poolRef.name}`] : [],
      },
    }),
  };
}

export function deploymentInformers(ctx: OperatorContext): DeploymentInformers {
  const f = ctx.informers;
  return {
    ...poolInformers(ctx),
    workloads: f.get<KubeObject<Deployment>>({
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      labelSelector: engineSelector,
      indexers: { [byInstanceNs]: instanceNs },
    }),
    engineServices: f.get<KubeObject<Service>>({
      apiVersion: 'v1',
      kind: 'Service',
      labelSelector: engineSelector,
      indexers: { [byInstanceNs]: instanceNs },
    }),
    enginePods: f.get<KubeObject<Pod>>({
      apiVersion: 'v1',
      kind: 'Pod',
      labelSelector: engineSelector,
      indexers: { [byInstanceNs]: instanceNs },
    }),
    instanceTypes: f.get<InstanceType>({ apiVersion: workerApiVersion, kind: 'InstanceType' }),
    nodes: f.get<KubeObject<Node>>({ apiVersion: 'v1', kind: 'Node' }),
  };
}
