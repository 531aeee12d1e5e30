// How events map to the pool controller's key: one key per backend (one ledger per master), plus one
// key for Bindings whose pool does not exist.
import type { KVCachePool, KVCachePoolBinding } from '../../api/types.ts';
import type { Controller } from '../../kube/controller.ts';
import type { KubeObject } from '../../kube/object.ts';
import type { PoolInformers } from '../../operator-io/informers.ts';
import { leaderOwner } from '../../vocabulary/store-objects.ts';

/** The key of the pass that handles Bindings naming a pool that does not exist. */
export const unpooledKey = '~unpooled';

/** The ledger key a pool belongs to (its single backend). */
export function poolKeyOf(pool: KVCachePool | undefined): string {
  return pool?.spec.backends?.[0] ?? unpooledKey;
}

/**
 * An update that moved only the status, which this controller alone writes: its own write coming back.
 * Labels and annotations count as more than status (controller-runtime's label and annotation
 * predicates): annotating an object is how people ask for another look.
 * A pass reads statuses from the cache when it runs; waking one for each of its own writes would run a
 * second pass over every Binding on the master after each pass that wrote.
 */
export function statusOnly(obj: KubeObject, event: string, old?: KubeObject): boolean {
  return (
    event === 'update' &&
    old !== undefined &&
    old.metadata.generation === obj.metadata.generation &&
    old.metadata.deletionTimestamp === obj.metadata.deletionTimestamp &&
    (old.metadata.finalizers ?? []).join() === (obj.metadata.finalizers ?? []).join() &&
    sameMap(old.metadata.labels, obj.metadata.labels) &&
    sameMap(old.metadata.annotations, obj.metadata.annotations)
  );
}

function sameMap(a: Record<string, string> = {}, b: Record<string, string> = {}): boolean {
  const keys = Object.keys(a);
  return keys.length === Object.keys(b).length && keys.every((k) => a[k] === b[k]);
}

export function wirePoolWatches(controller: Controller, i: PoolInformers): void {
  const bindingKey = (b: KVCachePoolBinding) => poolKeyOf(i.pools.get(b.spec.poolRef.name));
  controller.watch(i.pools, (p, e, old) =>
    statusOnly(p, e, old) ? [] : [...new Set([poolKeyOf(p), ...(old ? [poolKeyOf(old)] : [])])],
  );
  controller.watch(i.bindings, (b, e, old) => (statusOnly(b, e, old) ? [] : [bindingKey(b)]));
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
