// What `kubectl kvpool` reads from the cluster, in one pass of list calls: kvpool's objects with the
// status the operator wrote, the store's Pods and Leases, and the Events about those Pods. Everything
// the commands show is derived from this snapshot by pure functions.
import type { Lease as CoreLease } from 'kubernetes-types/coordination/v1.js';
import type { Event as CoreEvent, Pod as CorePod } from 'kubernetes-types/core/v1.js';
import type {
  KVCacheBackend,
  KVCachePool,
  KVCachePoolBinding,
  ModelDeployment,
  Setting,
} from '../api/types.ts';
import type { KubeClient } from '../kube/client.ts';
import type { KubeObject } from '../kube/object.ts';
import { ordinal } from '../kube/ordinal.ts';
import { nameLabel } from '../vocabulary/store-objects.ts';

export type Pod = KubeObject<CorePod>;
export type Lease = KubeObject<CoreLease>;
export type Event = KubeObject<CoreEvent>;

export interface Snapshot {
  backends: KVCacheBackend[];
  pools: KVCachePool[];
  bindings: KVCachePoolBinding[];
  deployments: ModelDeployment[];
  /** Leader and member Pods of every managed backend. */
  storePods: Pod[];
  /** The Leases in the namespaces the store Pods run in. */
  leases: Lease[];
  /** Events about the store Pods (a failed mount, say). */
  events: Event[];
  settings: Setting[];
}

const worker = 'worker.gpustack.ai/v1';

const byName = (a: KubeObject, b: KubeObject) =>
  ordinal(
    `${a.metadata.namespace ?? ''}/${a.metadata.name}`,
    `${b.metadata.namespace ?? ''}/${b.metadata.name}`,
  );

async function listAll<T extends KubeObject>(
  client: KubeClient,
  apiVersion: string,
  kind: string,
  query: { labelSelector?: string; fieldSelector?: string } = {},
  namespace?: string,
): Promise<T[]> {
  const list = await client.list<T>({ apiVersion, kind, ...(namespace ? { namespace } : {}) }, query);
  return list.items.map((o) => ({ ...o, apiVersion, kind })).sort(byName);
}

/** Settings are optional to read: a cluster without the Setting kind still gets a status. */
async function listSettings(client: KubeClient): Promise<Setting[]> {
  try {
    return await listAll<Setting>(client, 'gpustack.ai/v1', 'Setting');
  } catch {
    return [];
  }
}

export async function readSnapshot(client: KubeClient): Promise<Snapshot> {
  const [backends, pools, bindings, deployments, storePods, settings] = await Promise.all([
    listAll<KVCacheBackend>(client, worker, 'KVCacheBackend'),
    listAll<KVCachePool>(client, worker, 'KVCachePool'),
    listAll<KVCachePoolBinding>(client, worker, 'KVCachePoolBinding'),
    listAll<ModelDeployment>(client, worker, 'ModelDeployment'),
    listAll<Pod>(client, 'v1', 'Pod', { labelSelector: `${nameLabel}=kv-cache-backend` }),
    listSettings(client),
  ]);
  const namespaces = [...new Set(storePods.map((p) => p.metadata.namespace!))];
  const perNamespace = await Promise.all(
    namespaces.map(async (ns) => ({
      leases: await listAll<Lease>(client, 'coordination.k8s.io/v1', 'Lease', {}, ns),
      events: await listAll<Event>(client, 'v1', 'Event', { fieldSelector: 'involvedObject.kind=Pod' }, ns),
    })),
  );
  const podNames = new Set(storePods.map((p) => `${p.metadata.namespace}/${p.metadata.name}`));
  return {
    backends,
    pools,
    bindings,
    deployments,
    storePods,
    leases: perNamespace.flatMap((x) => x.leases),
    events: perNamespace
      .flatMap((x) => x.events)
      .filter((e) => podNames.has(`${e.involvedObject.namespace}/${e.involvedObject.name}`)),
    settings,
  };
}
