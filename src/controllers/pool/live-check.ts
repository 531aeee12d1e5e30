// Releasing a Binding (its ledger entry deleted, its finalizer removed) and letting a pool go cannot be
// undone, and the caches a pass reads follow separate watches: a ModelDeployment or Binding created a
// moment ago can be missing from one while another already shows the deletion. Before such a step the
// pass re-reads what it decides from the apiserver. Passes with nothing to release read nothing more.
import type { KVCachePool, KVCachePoolBinding, ModelDeployment } from '../../api/types.ts';
import type { KubeClient } from '../../kube/client.ts';
import { workerApiVersion } from '../../vocabulary/identity.ts';
import type { LedgerPlan, PlanInput } from './plan.ts';

type Input = Omit<PlanInput, 'ledger'>;

/** Whether a pass planned from this input could release a Binding or delete a ledger entry. */
export function mayRelease(input: Input, plan: LedgerPlan): boolean {
  return (
    plan.releasing.length > 0 ||
    [...input.registered].some(
      (d) => !plan.desired.has(d) && !plan.contested.has(d) && !plan.overTotal.has(d),
    )
  );
}

const bindingKey = (namespace: string | undefined, name: string | undefined) => `${namespace}/${name}`;

/** The Bindings of these pools and who holds them, read from the apiserver. */
export async function liveInput(client: KubeClient, input: Input): Promise<Input> {
  const [bindings, deployments] = await Promise.all([
    client.list<KVCachePoolBinding>({ apiVersion: workerApiVersion, kind: 'KVCachePoolBinding' }),
    client.list<ModelDeployment>({ apiVersion: workerApiVersion, kind: 'ModelDeployment' }),
  ]);
  const pools = new Set(input.pools.map((p) => p.metadata.name));
  const held = new Set(
    deployments.items.flatMap((m) =>
      m.spec.kvCache ? [bindingKey(m.metadata.namespace, m.spec.kvCache.poolRef.name)] : [],
    ),
  );
  return {
    ...input,
    bindings: bindings.items.filter((b) => pools.has(b.spec.poolRef.name)),
    isHeld: (b) => held.has(bindingKey(b.metadata.namespace, b.metadata.name)),
  };
}

/** Whether a ModelDeployment names this Binding, read from the apiserver. */
export async function heldLive(client: KubeClient, b: KVCachePoolBinding): Promise<boolean> {
  const deployments = await client.list<ModelDeployment>({
    apiVersion: workerApiVersion,
    kind: 'ModelDeployment',
    namespace: b.metadata.namespace,
  });
  return deployments.items.some((m) => m.spec.kvCache?.poolRef.name === b.metadata.name);
}

/** Whether any Binding names this pool, read from the apiserver. */
export async function poolInUseLive(client: KubeClient, pool: KVCachePool): Promise<boolean> {
  const bindings = await client.list<KVCachePoolBinding>({
    apiVersion: workerApiVersion,
    kind: 'KVCachePoolBinding',
  });
  return bindings.items.some((b) => b.spec.poolRef.name === pool.metadata.name);
}
