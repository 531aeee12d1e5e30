// What every controller and webhook of the operator shares.
import type { KubeClient } from '../kube/client.ts';
import type { EventRecorder } from '../kube/events.ts';
import type { InformerFactory } from '../kube/informer-factory.ts';
import type { AdminRequestOptions } from '../store/admin-client.ts';
import type { ReplicaReportWatcher } from '../store/replica-watcher.ts';
import type { StoreWatcher } from '../store/store-watcher.ts';
import type { Settings } from './settings.ts';

export interface OperatorContext {
  client: KubeClient;
  /** The operator's own namespace, where managed stores run. */
  namespace: string;
  informers: InformerFactory;
  events: EventRecorder;
  store: StoreWatcher;
  /** How the controllers' requests to a store's admin endpoint are made (the ledger's). */
  storeRequests: AdminRequestOptions;
  /** What engine replicas report about the cache, read apart from any pass. */
  replicas: ReplicaReportWatcher;
  settings: Settings;
  /**
   * Admission's own writes (a Binding's domain claim), made on every replica: they are conditional
   * (create if absent, update at a resourceVersion), so no leadership term gates them. `client` if unset.
   */
  admissionClient?: KubeClient;
  /** How long a domain claim whose Binding does not exist is kept for its create to land (60 s if unset). */
  domainClaimGraceMs?: number;
}
