// What the ModelDeployment controller reads, and how events map to deployment keys.
import type { InstanceType, KVCachePool, KVCachePoolBinding } from '../../api/types.ts';
import type { Controller } from '../../kube/controller.ts';
import { type Informer, objectKey } from '../../kube/informer.ts';
import type { KubeObject } from '../../kube/object.ts';
import type { Pod } from '../backend/pod-view.ts';
import { type OperatorContext, workerApiVersion } from '../context.ts';
import { byBindingRef, byPool, type PoolInformers, poolInformers } from '../pool/watches.ts';
import { isAcceleratorLabel } from './runner-image.ts';

export const byInstanceNs = 'instance-ns';
const selector = 'app.kubernetes.io/name=model-deployment';

export interface DeploymentInformers extends PoolInformers {
  workloads: Informer<
    KubeObject & {
      spec?: { replicas?: number; template?: { metadata?: KubeObject['metadata'] } };
      status?: { readyReplicas?: number; updatedReplicas?: number; observedGeneration?: number };
    }
  >;
  engineServices: Informer<KubeObject>;
  enginePods: Informer<Pod>;
  instanceTypes: Informer<InstanceType>;
  /** Nodes, for the accelerator runtime version a default image is tagged with. */
  nodes: Informer<KubeObject>;
}

const instanceNs = (o: KubeObject) => {
  const i = o.metadata.labels?.['app.kubernetes.io/instance'];
  return i ? [`${o.metadata.namespace}/${i}`] : [];
};

export function deploymentInformers(ctx: OperatorContext): DeploymentInformers {
  const f = ctx.informers;
  return {
    ...poolInformers(ctx),
    workloads: f.get({
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      labelSelector: selector,
      indexers: { [byInstanceNs]: instanceNs },
    }),
    engineServices: f.get({
      apiVersion: 'v1',
      kind: 'Service',
      labelSelector: selector,
      indexers: { [byInstanceNs]: instanceNs },
    }),
    enginePods: f.get<Pod>({
      apiVersion: 'v1',
      kind: 'Pod',
      labelSelector: selector,
      indexers: { [byInstanceNs]: instanceNs },
    }),
    instanceTypes: f.get<InstanceType>({ apiVersion: workerApiVersion, kind: 'InstanceType' }),
    nodes: f.get({ apiVersion: 'v1', kind: 'Node' }),
  };
}

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
  for (const inf of [i.workloads, i.engineServices, i.enginePods] as Informer<KubeObject>[])
    controller.watch(inf, instanceNs);
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
