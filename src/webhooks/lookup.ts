// Admission reads the objects a request names from the operator's caches. A miss re-reads the
// apiserver before anything is judged by its absence: an object created a moment ago may not have
// reached the cache yet (a Binding applied together with the Pod or pool that names it).
import type { KVCacheBackend, KVCachePool, KVCachePoolBinding } from '../api/types.ts';
import { type OperatorContext, workerApiVersion } from '../controllers/context.ts';
import type { PoolInformers } from '../controllers/pool/watches.ts';
import type { Informer } from '../kube/informer.ts';
import type { KubeObject } from '../kube/object.ts';

async function cachedOrLive<T extends KubeObject>(
  ctx: OperatorContext,
  informer: Informer<T>,
  kind: string,
  name: string,
  namespace?: string,
): Promise<T | undefined> {
  return (
    informer.get(name, namespace) ??
    (await ctx.client.find<T>({
      apiVersion: workerApiVersion,
      kind,
      name,
      ...(namespace ? { namespace } : {}),
    }))
  );
}

export const findBackend = (ctx: OperatorContext, i: PoolInformers, name: string) =>
  cachedOrLive<KVCacheBackend>(ctx, i.backends, 'KVCacheBackend', name);

export const findPool = (ctx: OperatorContext, i: PoolInformers, name: string) =>
  cachedOrLive<KVCachePool>(ctx, i.pools, 'KVCachePool', name);

/** A Binding and the pool and backend it resolves to, as far as they exist. */
export async function resolveBinding(
  ctx: OperatorContext,
  i: PoolInformers,
  name: string,
  namespace: string,
): Promise<{ binding?: KVCachePoolBinding; pool?: KVCachePool; backend?: KVCacheBackend }> {
  const binding = await cachedOrLive<KVCachePoolBinding>(
    ctx,
    i.bindings,
    'KVCachePoolBinding',
    name,
    namespace,
  );
  const pool = binding && (await findPool(ctx, i, binding.spec.poolRef.name));
  const backend = pool && (await findBackend(ctx, i, pool.spec.backends[0]!));
  return { binding, pool, backend };
}
