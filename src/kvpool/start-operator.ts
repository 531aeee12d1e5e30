// Assembles the operator: shared context, controllers, admission webhooks and their registration,
// under a Manager (leader election, health, metrics). Used by `kvpool operator` and by tests.

import { BackendReconciler } from '../controllers/backend/reconciler.ts';
import { reportFigures } from '../controllers/figure-metrics.ts';
import { ModelDeploymentReconciler } from '../controllers/modeldeployment/reconciler.ts';
import { PoolReconciler } from '../controllers/pool/reconciler.ts';
import type { KubeClient } from '../kube/client.ts';
import { EventRecorder } from '../kube/events.ts';
import { InformerFactory } from '../kube/informer-factory.ts';
import { LeadershipTerm } from '../kube/leadership-term.ts';
import { log } from '../kube/log.ts';
import { Manager, type ManagerOptions } from '../kube/manager.ts';
import { WebhookCertificates } from '../kube/webhook-certs.ts';
import { WebhookServer } from '../kube/webhook-server.ts';
import type { OperatorContext } from '../operator-io/operator-context.ts';
import { Settings } from '../operator-io/settings.ts';
import { ReplicaReportWatcher } from '../store/replica-watcher.ts';
import { StoreWatcher } from '../store/store-watcher.ts';
import {
  mutatingConfigurationName,
  validatingConfigurationName,
  type WebhookReach,
} from '../webhooks/configuration.ts';
import { applyWebhookConfigurations, type Hooks, registerWebhookHandlers } from '../webhooks/index.ts';
import { operatorDefaults } from './defaults.ts';

export interface OperatorStartOptions {
  client: KubeClient;
  namespace: string;
  identity: string;
  leaderElection?: ManagerOptions['leaderElection'];
  /** Called when the Lease is lost; by default the process exits non-zero. */
  onLostLeadership?: () => void;
  healthPort?: number;
  storePollMs?: number;
  replicaPollMs?: number;
  /** How often a backend is passed over without an event. */
  observeIntervalMs?: number;
  /** How often a pool's ledger key is passed over without an event. */
  poolObserveIntervalMs?: number;
  /** How long a node's tier cleanup may take before it is reported and given up. */
  tierCleanupDeadlineMs?: number;
  /** How long a domain claim whose Binding does not exist is kept for its create to land. */
  domainClaimGraceMs?: number;
  webhook?: {
    port: number;
    host?: string;
    /** How the apiserver reaches the server; a Service named `serviceName` by default. */
    reach: WebhookReach;
    /** DNS names / IPs on the serving certificate. */
    hosts: string[];
    secretName?: string;
    /**
     * The leader applies the webhook configurations itself (a cluster without the chart, such as the
     * local one); otherwise they come with the installation and the leader only sets their CA bundle.
     */
    register?: boolean;
    /** The certificate Secret is issued by cert-manager: read it, never write it or the CA bundle. */
    externalCertificates?: boolean;
    /** How often every replica re-reads the certificate Secret (60 s by default). */
    refreshMs?: number;
  };
}

export interface RunningOperator {
  ctx: OperatorContext;
  manager: Manager;
  stop(): Promise<void>;
}

export async function startOperator(o: OperatorStartOptions): Promise<RunningOperator> {
  // Every request names the replica, so the apiserver's audit log and the store tell the writers apart.
  const userAgent = `kvpool-operator (${o.identity})`;
  const client = o.client.with({ userAgent });
  // Every write but the election's own takes the leadership term's signal (the store's as well).
  const term = new LeadershipTerm();
  const writer = client.with({ writeSignal: () => term.signal });
  const d = operatorDefaults;
  // Admission claims a Binding's domain on every replica, with writes that are conditional themselves,
  // on connections of its own: a claim never waits behind a pass's writes or the informers' watches.
  const admissionClient = client.withOwnConnections();
  const informers = new InformerFactory(writer);
  const ctx: OperatorContext = {
    client: writer,
    namespace: o.namespace,
    informers,
    events: new EventRecorder(writer, 'kvpool-operator'),
    store: new StoreWatcher(o.storePollMs ?? d.storePollMs),
    storeRequests: { userAgent, writeSignal: () => term.signal },
    replicas: new ReplicaReportWatcher(o.replicaPollMs ?? d.replicaPollMs),
    settings: new Settings(informers, o.namespace),
    admissionClient,
    domainClaimGraceMs: o.domainClaimGraceMs ?? d.domainClaimGraceMs,
  };
  const server = new WebhookServer();
  const hooks = registerWebhookHandlers(server, ctx);
  const manager = new Manager({
    client,
    term,
    identity: o.identity,
    leaderElection: o.leaderElection,
    ...(o.onLostLeadership ? { onLostLeadership: o.onLostLeadership } : {}),
    healthPort: o.healthPort,
    ...webhookServing(o, writer, server, hooks),
  });
  registerControllers(manager, ctx, {
    observeIntervalMs: o.observeIntervalMs ?? d.observeIntervalMs,
    poolObserveIntervalMs: o.poolObserveIntervalMs ?? d.poolObserveIntervalMs,
    tierCleanupDeadlineMs: o.tierCleanupDeadlineMs ?? d.tierCleanupDeadlineMs,
  });
  await manager.start();
  return {
    ctx,
    manager,
    async stop() {
      await manager.shutdown();
      ctx.store.stop();
      ctx.replicas.stop();
      await admissionClient.close();
    },
  };
}

/** The Manager's admission serving: its certificates, and the configurations when the leader applies them. */
function webhookServing(
  o: OperatorStartOptions,
  writer: KubeClient,
  server: WebhookServer,
  hooks: Hooks,
): Pick<ManagerOptions, 'webhook'> {
  const d = operatorDefaults;
  const certificates = o.webhook
    ? new WebhookCertificates(writer, {
        namespace: o.namespace,
        secretName: o.webhook.secretName ?? d.webhook.secret,
        hosts: o.webhook.hosts,
        validatingConfigurations: [validatingConfigurationName],
        mutatingConfigurations: [mutatingConfigurationName],
        external: o.webhook.externalCertificates ?? false,
      })
    : undefined;
  const reach = o.webhook?.reach;
  if (!o.webhook || !certificates || !reach) return {};
  return {
    webhook: {
      server,
      certificates,
      port: o.webhook.port,
      host: o.webhook.host,
      refreshMs: o.webhook.refreshMs,
      ...(o.webhook.register
        ? {
            onLeaderCertificates: async (caBundle: string) => {
              await applyWebhookConfigurations(writer, hooks, reach, caBundle);
              log.info('admission webhooks registered');
            },
          }
        : {}),
    },
  };
}

/** Registers each controller (each declares its own watches) and every informer they created. */
function registerControllers(
  manager: Manager,
  ctx: OperatorContext,
  o: { observeIntervalMs: number; poolObserveIntervalMs: number; tierCleanupDeadlineMs: number },
): void {
  const backend = new BackendReconciler(ctx, {
    observeIntervalMs: o.observeIntervalMs,
    tierCleanupDeadlineMs: o.tierCleanupDeadlineMs,
  });
  manager.addController(backend.controller);
  manager.addController(new PoolReconciler(ctx, { observeIntervalMs: o.poolObserveIntervalMs }).controller);
  manager.addController(new ModelDeploymentReconciler(ctx).controller);
  reportFigures(ctx.informers, () => manager.leading);
  for (const informer of ctx.informers.all()) manager.addInformer(informer);
}
