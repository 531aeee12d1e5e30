// How the events of what the backend controller reads (operator-io/informers.ts) map to backend keys.
import type { KVCachePool, KVCachePoolBinding } from '../../api/types.ts';
import type { Controller, KeyMapper } from '../../kube/controller.ts';
import type { Informer } from '../../kube/informer.ts';
import { stepDownAnnotation } from '../../kube/leader-election.ts';
import type { BackendInformers } from '../../operator-io/informers.ts';
import { instanceOf } from '../../operator-io/informers.ts';
import type { OperatorContext } from '../../operator-io/operator-context.ts';
import { componentLabel, leaderOwner } from '../../vocabulary/store-objects.ts';

/**
 * A Binding that comes or goes changes which namespaces its store's NetworkPolicies admit: it wakes
 * the backend of its pool. Its pool and namespace never change, so an update wakes nothing.
 */
export function bindingWakes(pools: Pick<Informer<KVCachePool>, 'get'>): KeyMapper<KVCachePoolBinding> {
  return (b, event) =>
    event === 'add' || event === 'delete' ? (pools.get(b.spec.poolRef.name)?.spec.backends ?? []) : [];
}

export function wireBackendWatches(controller: Controller, i: BackendInformers, ctx: OperatorContext): void {
  controller.watch(i.backends, (b) => [b.metadata.name!]);
  controller.watch(i.pools, (p, _e, old) => [
    ...new Set([...(p.spec.backends ?? []), ...(old?.spec.backends ?? [])]),
  ]);
  controller.watch(i.bindings, bindingWakes(i.pools));
  controller.watch(i.pods, instanceOf);
  controller.watch(i.deployments, instanceOf);
  controller.watch(i.daemonSets, instanceOf);
  controller.watch(i.services, instanceOf);
  controller.watch(i.slices, (s) => leaderOwner(s.metadata.labels?.['kubernetes.io/service-name']));
  controller.watch(i.mountFailures, (e) => {
    const pod = i.pods.list().find((p) => p.metadata.uid === e.involvedObject.uid);
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
