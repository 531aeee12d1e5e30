// Assembles the operator: shared context, controllers, admission webhooks and their registration,
// under a Manager (leader election, health, metrics). Used by `kvpool operator` and by tests.

import type { OperatorContext } from './controllers/context.ts';
import { buildContext, registerControllers } from './controllers/index.ts';
import type { KubeClient } from './kube/client.ts';
import { log } from './kube/log.ts';
import { Manager, type ManagerOptions } from './kube/manager.ts';
import { WebhookCertificates } from './kube/webhook-certs.ts';
import { WebhookServer } from './kube/webhook-server.ts';
import {
  mutatingConfigurationName,
  validatingConfigurationName,
  type WebhookReach,
} from './webhooks/configuration.ts';
import { applyWebhookConfigurations, registerWebhookHandlers } from './webhooks/index.ts';

export interface OperatorStartOptions {
  client: KubeClient;
  namespace: string;
  identity: string;
  leaderElection?: ManagerOptions['leaderElection'];
  healthPort?: number;
  storePollMs?: number;
  replicaPollMs?: number;
  observeIntervalMs?: number;
  /** How long a node's tier cleanup may take before it is reported and given up (default 5 minutes). */
  tierCleanupDeadlineMs?: number;
  webhook?: {
    port: number;
    host?: string;
    /** How the apiserver reaches the server; a Service named `serviceName` by default. */
    reach: WebhookReach;
    /** DNS names / IPs on the serving certificate. */
    hosts: string[];
    secretName?: string;
  };
}

export interface RunningOperator {
  ctx: OperatorContext;
  manager: Manager;
  stop(): Promise<void>;
}

export async function startOperator(o: OperatorStartOptions): Promise<RunningOperator> {
  const settings = {
    namespace: o.namespace,
    storePollMs: o.storePollMs,
    replicaPollMs: o.replicaPollMs,
    observeIntervalMs: o.observeIntervalMs,
    tierCleanupDeadlineMs: o.tierCleanupDeadlineMs,
  };
  const ctx = buildContext(o.client, settings);
  const server = new WebhookServer();
  const hooks = registerWebhookHandlers(server, ctx);
  const certificates = o.webhook
    ? new WebhookCertificates(o.client, {
        namespace: o.namespace,
        secretName: o.webhook.secretName ?? 'kvpool-webhook-certs',
        hosts: o.webhook.hosts,
        validatingConfigurations: [validatingConfigurationName],
        mutatingConfigurations: [mutatingConfigurationName],
      })
    : undefined;
  const manager = new Manager({
    client: o.client,
    identity: o.identity,
    leaderElection: o.leaderElection,
    healthPort: o.healthPort,
    ...(o.webhook && certificates
      ? { webhook: { server, certificates, port: o.webhook.port, host: o.webhook.host } }
      : {}),
  });
  registerControllers(manager, ctx, settings);
  await manager.start();
  if (o.webhook && certificates) {
    await applyWebhookConfigurations(o.client, hooks, o.webhook.reach, certificates.caBundle!);
    log.info({ port: manager.webhookPort }, 'admission webhooks registered');
  }
  return {
    ctx,
    manager,
    async stop() {
      await manager.shutdown();
      ctx.store.stop();
      ctx.replicas.stop();
    },
  };
}
