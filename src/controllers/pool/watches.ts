// What the pool controller reads and how events map to its key: one key per backend (one ledger per
// master), plus one key for Bindings whose pool does not exist.
import type { ConfigMap } from 'kubernetes-types/core/v1.js';
import type { KVCachePool, KVCachePoolBinding, ModelDeployment } from '../../api/types.ts';
import type { Controller } from '../../kube/controller.ts';
import type { Informer } from '../../kube/informer.ts';
import type { KubeObject } from '../../kube/object.ts';
import { workerApiVersion } from '../../model/identity.ts';
import { leaderOwner } from '../../model/store-objects.ts';
import { type BackendInformers, backendInformers } from '../backend/watches.ts';
import type { OperatorContext } from '../context.ts';

export const byPool = 'pool';
export const byBindingRef = 'binding';
/** The key of the pass that handles Bindings naming a pool that does not exist. */
export const unpooledKey = '~unpooled';

export interface PoolInformers extends BackendInformers {
  bindings: Informer<KVCachePoolBinding>;
  modelDeployments: Informer<ModelDeployment>;
  policies: Informer<KubeObject<ConfigMap>>;
}

export function poolInformers(ctx: OperatorContext): PoolInformers {
  return {
    ...backendInformers(ctx),
    bindings: ctx.informers.get<KVCachePoolBinding>({
      apiVersion: workerApiVersion,
      kind: 'KVCachePoolBinding',
      indexers: { [byPool]: (b) => [b.spec.poolRef.name] },
    }),
    policies: ctx.informers.get<KubeObject<ConfigMap>>({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      namespace: ctx.namespace,
      labelSelector: 'app.kubernetes.io/component=tenant-quota-policy',
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

/** The ledger key a pool belongs to (its single backend). */
export function poolKeyOf(pool: KVCachePool | undefined): string {
  return pool?.spec.backends?.[0] ?? unpooledKey;
}

export function wirePoolWatches(controller: Controller, i: PoolInformers): void {
  const bindingKey = (b: KVCachePoolBinding) => poolKeyOf(i.pools.get(b.spec.poolRef.name));
  controller.watch(i.pools, (p, _e, old) => [...new Set([poolKeyOf(p), ...(old ? [poolKeyOf(old)] : [])])]);
  controller.watch(i.bindings, (b) => [bindingKey(b)]);
  controller.watch(i.backends, (b) => [b.metadata.name!]);
  controller.watch(i.modelDeployments, (m) => {
    if (!m.spec.kvCache) return [];
    const b = i.bindings.get(m.spec.kvCache.poolRef.name, m.metadata.namespace);
    return b ? [bindingKey(b)] : [];
  });
  controller.watch(i.slices, (s) => {
    return leaderOwner(s.metadata.labels?.['kubernetes.io/service-name']);
  });
}
