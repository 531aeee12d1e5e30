// How the events of what the ModelDeployment controller reads (operator-io/informers.ts) map to deployment keys.
import type { KVCachePool, KVCachePoolBinding } from '../../api/types.ts';
import type { Controller } from '../../kube/controller.ts';
import { objectKey } from '../../kube/informer.ts';
import type { KubeObject } from '../../kube/object.ts';
import { byBindingRef, byPool, type DeploymentInformers, instanceNs } from '../../operator-io/informers.ts';
import type { OperatorContext } from '../../operator-io/operator-context.ts';
import { isAcceleratorLabel } from '../../vocabulary/runner-image.ts';

function acceleratorLabelsOf(node: KubeObject | undefined): string {
  const labels = Object.entries(node?.metadata.labels ?? {}).filter(([k]) => isAcceleratorLabel(k));
  return JSON.stringify(labels.sort(([a], [b]) => (a < b ? -1 : 1)));
}

export function wireDeploymentWatches(
  controller: Controller,
  i: DeploymentInformers,
  ctx: OperatorContext,
): void {
  controller.watch(i.modelDeployments, (m) => [objectKey(m)]);
  controller.watch(i.workloads, instanceNs);
  controller.watch(i.engineServices, instanceNs);
  controller.watch(i.enginePods, instanceNs);
  const byBinding = (b: KVCachePoolBinding) =>
    i.modelDeployments.byIndex(byBindingRef, `${b.metadata.namespace}/${b.metadata.name}`).map(objectKey);
  controller.watch(i.bindings, byBinding);
  controller.watch(i.pools, (p: KVCachePool) =>
    i.bindings.byIndex(byPool, p.metadata.name!).flatMap(byBinding),
  );
  controller.watch(i.instanceTypes, () => i.modelDeployments.list().map(objectKey));
  // Nodes change all the time; only their accelerator labels change an image.
  controller.watch(i.nodes, (n, event, old) =>
    event === 'update' && acceleratorLabelsOf(n) === acceleratorLabelsOf(old)
      ? []
      : i.modelDeployments.list().map(objectKey),
  );
  controller.watch(ctx.settings.informer, () => i.modelDeployments.list().map(objectKey));
}
