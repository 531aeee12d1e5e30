// Builds the operator's shared context and registers every controller with a manager.

import type { OperatorContext } from '../context/operator-context.ts';
import { Settings } from '../context/settings.ts';
import type { KubeClient } from '../kube/client.ts';
import { EventRecorder } from '../kube/events.ts';
import { InformerFactory } from '../kube/informer-factory.ts';
import type { Manager } from '../kube/manager.ts';
import type { AdminRequestOptions } from '../store/admin-client.ts';
import { ReplicaReportWatcher } from '../store/replica-watcher.ts';
import { StoreWatcher } from '../store/store-watcher.ts';
import { BackendReconciler } from './backend/reconciler.ts';
import { reportFigures } from './figure-metrics.ts';
import { ModelDeploymentReconciler } from './modeldeployment/reconciler.ts';
import { PoolReconciler } from './pool/reconciler.ts';

export interface OperatorOptions {
  namespace: string;
  storePollMs?: number;
  /** How often ready engine replicas are asked what they report about the cache (default 5 s). */
  replicaPollMs?: number;
  observeIntervalMs?: number;
  poolObserveIntervalMs?: number;
  tierCleanupDeadlineMs?: number;
  storeRequests?: AdminRequestOptions;
}

export function buildContext(client: KubeClient, options: OperatorOptions): OperatorContext {
  const informers = new InformerFactory(client);
  return {
    client,
    namespace: options.namespace,
    informers,
    events: new EventRecorder(client, 'kvpool-operator'),
    store: new StoreWatcher(options.storePollMs ?? 1000),
    storeRequests: options.storeRequests ?? {},
    replicas: new ReplicaReportWatcher(options.replicaPollMs ?? 5000),
    settings: new Settings(informers, options.namespace),
  };
}

/** Registers the controllers and every informer they created. */
export function registerControllers(manager: Manager, ctx: OperatorContext, options: OperatorOptions): void {
  const backend = new BackendReconciler(ctx, {
    observeIntervalMs: options.observeIntervalMs,
    tierCleanupDeadlineMs: options.tierCleanupDeadlineMs,
  });
  manager.addController(backend.controller);
  const pool = new PoolReconciler(ctx, { observeIntervalMs: options.poolObserveIntervalMs });
  manager.addController(pool.controller);
  manager.addController(new ModelDeploymentReconciler(ctx).controller);
  reportFigures(ctx.informers, () => manager.leading);
  for (const informer of ctx.informers.all()) manager.addInformer(informer);
}
