// Deleting a backend (`Deletable`): held while a pool uses it; then the leader Deployment, its
// Service, its etcd and every member DaemonSet this backend owns are deleted, and the finalizer is removed only
// once their Pods are gone (or, past termination grace + 2 minutes, abandoned with a Warning event).
import type { Pod } from 'kubernetes-types/core/v1.js';
import type { KVCacheBackend, KVCachePool } from '../../api/types.ts';
import type { KubeClient } from '../../kube/client.ts';
import type { KubeObject } from '../../kube/object.ts';
import { removeFinalizer } from '../../operator-io/apply.ts';
import { type BackendInformers, byInstance } from '../../operator-io/informers.ts';
import type { OperatorContext } from '../../operator-io/operator-context.ts';
import { metadataReplicated, resolveEtcd } from '../../vocabulary/backend-spec.ts';
import { workerApiVersion } from '../../vocabulary/identity.ts';
import { etcdName, instanceLabel, ownedByBackend } from '../../vocabulary/store-objects.ts';
import type { TierCleanup } from './tier-cleanup.ts';

export const teardownPollMs = 2000;
const abandonMarginMs = 120_000;

export type TeardownOutcome = { done: true } | { done: false; message: string };

/** A terminating Pod past its grace period plus two minutes is abandoned, not waited for. */
function abandoned(pod: KubeObject<Pod>): boolean {
  if (!pod.metadata.deletionTimestamp) return false;
  const grace = (pod.spec?.terminationGracePeriodSeconds ?? 30) * 1000;
  return Date.now() - Date.parse(pod.metadata.deletionTimestamp) > grace + abandonMarginMs;
}

/**
 * Whether any pool names the backend, read from the apiserver: tearing the store down (and emptying
 * its disk tier) cannot be undone, and a pool created a moment ago may not be cached yet.
 */
export async function backendInUseLive(client: KubeClient, backend: KVCacheBackend): Promise<boolean> {
  const pools = await client.list<KVCachePool>({ apiVersion: workerApiVersion, kind: 'KVCachePool' });
  return pools.items.some((p) => p.spec.backends.includes(backend.metadata.name!));
}

export async function teardownBackend(
  backend: KVCacheBackend,
  ctx: OperatorContext,
  informers: BackendInformers,
  warned: Set<string>,
  cleanup: TierCleanup,
): Promise<TeardownOutcome> {
  const name = backend.metadata.name!;
  const ns = ctx.namespace;
  const isOurs = (o: KubeObject) => o.metadata.labels?.[instanceLabel] === name && ownedByBackend(o, backend);
  const workloads = [
    ...informers.deployments.list(ns),
    ...informers.daemonSets.byIndex(byInstance, name),
  ].filter(isOurs);
  const services = informers.services.list(ns).filter(isOurs);
  for (const obj of [...workloads, ...services]) {
    if (obj.metadata.deletionTimestamp) continue;
    const ref = {
      apiVersion: obj.apiVersion ?? 'apps/v1',
      kind: obj.kind,
      namespace: ns,
      name: obj.metadata.name!,
    };
    await ctx.client.delete(ref, { propagationPolicy: 'Background' });
  }
  // The store's etcd goes with it (its volumes with the StatefulSet): it holds nothing but this store's index.
  if (metadataReplicated(backend) && resolveEtcd(backend).managed) {
    const etcd = { apiVersion: 'apps/v1', kind: 'StatefulSet', namespace: ns, name: etcdName(backend) };
    await ctx.client.delete(etcd, { propagationPolicy: 'Background' });
  }
  // The tier's cleanup Pods run after the members are gone; they are not workloads to wait for.
  const pods = informers.pods
    .byIndex(byInstance, name)
    .filter((p) => p.metadata.labels?.['app.kubernetes.io/component'] !== 'tier-cleanup');
  const waiting = pods.filter((p) => !abandoned(p));
  for (const p of pods.filter(abandoned)) {
    if (warned.has(p.metadata.uid!)) continue;
    warned.add(p.metadata.uid!);
    await ctx.events.record(
      p,
      'Warning',
      'KVCacheWorkloadNotTerminated',
      `Pod ${p.metadata.name} of backend ${name} did not terminate within its grace period + 2 minutes on node ${p.spec?.nodeName ?? '?'}; no longer waited for`,
    );
  }
  if (workloads.length || waiting.length) {
    const parts = [
      ...workloads.map((w) => `${w.kind}/${w.metadata.name}`),
      ...(waiting.length ? [`${waiting.length} Pod(s)`] : []),
    ];
    return { done: false, message: `waiting for ${parts.join(', ')} to terminate` };
  }
  const tier = await cleanup.run(backend);
  if (!tier.done) return { done: false, message: tier.message };
  await removeFinalizer(ctx.client, backend);
  cleanup.forget(backend);
  return { done: true };
}
