// What every controller and webhook of the operator shares.
import type { KubeClient } from '../kube/client.ts';
import type { EventRecorder } from '../kube/events.ts';
import type { InformerFactory } from '../kube/informer-factory.ts';
import type { StoreWatcher } from '../store/store-watcher.ts';
import type { ReplicaReportWatcher } from './modeldeployment/replica-watcher.ts';
import type { Settings } from './settings.ts';

export interface OperatorContext {
  client: KubeClient;
  /** The operator's own namespace, where managed stores run. */
  namespace: string;
  informers: InformerFactory;
  events: EventRecorder;
  store: StoreWatcher;
  /** What engine replicas report about the cache, read apart from any pass. */
  replicas: ReplicaReportWatcher;
  settings: Settings;
}

/** Field managers: one per writer. */
export const fieldManagers = {
  controller: 'kvpool-controller',
  status: 'kvpool-controller/status',
  /** A role's replica count alone, while its replicas are kept as they run (no cache connection). */
  replicas: 'kvpool-controller/replicas',
} as const;

export const finalizer = 'worker.gpustack.ai/kvpool-protection';
export const workerApiVersion = 'worker.gpustack.ai/v1';
