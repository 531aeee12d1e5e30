// Admission reads the objects a request names from the operator's caches. A miss re-reads the
// apiserver before anything is judged by its absence, and a refusal is judged again on the apiserver's
// objects (`fresh`): an object created or changed a moment ago may not have reached the cache yet (a
// Binding applied together with the Pod that names it, a pool that just became Ready).
import type { KVCacheBackend, KVCachePool, KVCachePoolBinding } from '../api/types.ts';
import type { Informer } from '../kube/informer.ts';
import type { KubeObject } from '../kube/object.ts';
import type { PoolInformers } from '../operator-io/informers.ts';
import type { OperatorContext } from '../operator-io/operator-context.ts';
import { workerApiVersion } from '../vocabulary/identity.ts';

async function cachedOrLive<T extends KubeObject>(
  ctx: OperatorContext,
  informer: Informer<T>,
  kind: string,
  name: string,
  namespace: string | undefined,
  fresh: boolean,
): Promise<T | undefined> {
  return (
    (fresh ? undefined : informer.get(name, namespace)) ??
    (await ctx.client.find<T>({
      apiVersion: workerApiVersion,
      kind,
      name,
      ...(namespace ? { namespace } : {}),
    }))
  );
}

export const findBackend = (ctx: OperatorContext, i: PoolInformers, name: string, fresh = false) =>
  cachedOrLive<KVCacheBackend>(ctx, i.backends, 'KVCacheBackend', name, undefined, fresh);

export const findPool = (ctx: OperatorContext, i: PoolInformers, name: string, fresh = false) =>
  cachedOrLive<KVCachePool>(ctx, i.pools, 'KVCachePool', name, undefined, fresh);

/** A Binding and the pool and backend it resolves to, as far as they exist. */
export async function resolveBinding(
  ctx: OperatorContext,
  i: PoolInformers,
  name: string,
  namespace: string,
  fresh = false,
): Promise<{ binding?: KVCachePoolBinding; pool?: KVCachePool; backend?: KVCacheBackend }> {
  const binding = await cachedOrLive<KVCachePoolBinding>(
    ctx,
    i.bindings,
    'KVCachePoolBinding',
    name,
    namespace,
    fresh,
  );
  const pool = binding && (await findPool(ctx, i, binding.spec.poolRef.name, fresh));
  const backend = pool && (await findBackend(ctx, i, pool.spec.backends[0]!, fresh));
  return { binding, pool, backend };
}

/** Judges on cached objects; a refusal is judged again on the apiserver's before it stands. */
export async function judgeConfirmingRefusals<T>(
  judge: (fresh: boolean) => Promise<T>,
  refuses: (verdict: T) => boolean,
): Promise<T> {
  const cached = await judge(false);
  return refuses(cached) ? judge(true) : cached;
}
