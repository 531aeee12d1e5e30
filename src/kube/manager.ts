// The operator process's lifecycle: health and metrics, webhooks (on every replica), informers, and the
// controllers, which run only while this replica holds the operator Lease. Shutdown drains in-flight
// reconciles and releases the Lease so a standby takes over at once.

import type { KubeClient } from './client.ts';
import type { Controller } from './controller.ts';
import { HealthServer } from './health-server.ts';
import type { Informer } from './informer.ts';
import { LeaderElector } from './leader-election.ts';
import { log } from './log.ts';
import { leaderGauge } from './metrics.ts';
import type { KubeObject } from './object.ts';
import type { WebhookCertificates } from './webhook-certs.ts';
import type { WebhookServer } from './webhook-server.ts';

export interface ManagerOptions {
  client: KubeClient;
  identity: string;
  leaderElection?: {
    namespace: string;
    leaseName: string;
    leaseDurationMs?: number;
    renewDeadlineMs?: number;
    retryPeriodMs?: number;
  };
  /** Port for /healthz, /readyz and /metrics (0 picks a free one); none when omitted. */
  healthPort?: number;
  webhook?: {
    server: WebhookServer;
    certificates: WebhookCertificates;
    port: number;
    host?: string;
    /** How often the certificate Secret is re-read (rotation, other replicas' renewals). */
    refreshMs?: number;
  };
  /** Called when the Lease is lost; by default the process exits non-zero. */
  onLostLeadership?: () => void;
}

export class Manager {
  private readonly options: ManagerOptions;
  private readonly informers: Informer<KubeObject>[] = [];
  private readonly controllers: Controller[] = [];
  private readonly health = new HealthServer();
  private elector: LeaderElector | undefined;
  private certTimer: NodeJS.Timeout | undefined;
  private shuttingDown = false;
  private leading: Promise<void> | undefined;
  healthPort: number | undefined;
  webhookPort: number | undefined;

  constructor(options: ManagerOptions) {
    this.options = options;
  }

  addInformer<T extends KubeObject>(informer: Informer<T>): Informer<T> {
    this.informers.push(informer as unknown as Informer<KubeObject>);
    return informer;
  }

  addController(controller: Controller): Controller {
    this.controllers.push(controller);
    return controller;
  }

  async start(): Promise<void> {
    const o = this.options;
    this.health.addLiveness(() => undefined);
    this.health.addReadiness(() => {
      const pending = this.informers.filter((i) => !i.hasSynced()).map((i) => i.kind);
      return pending.length ? `informers not synced: ${pending.join(', ')}` : undefined;
    });
    if (o.healthPort !== undefined) this.healthPort = await this.health.start(o.healthPort);
    if (o.webhook) await this.startWebhooks(o.webhook);
    for (const informer of this.informers) informer.start();
    await Promise.all(this.informers.map((i) => i.waitForSync()));
    if (!o.leaderElection) {
      this.startControllers();
      return;
    }
    const { leaseName, ...election } = o.leaderElection;
    this.elector = new LeaderElector(o.client, { ...election, name: leaseName, identity: o.identity });
    this.leading = this.lead(this.elector);
  }

  private async lead(elector: LeaderElector): Promise<void> {
    if (!(await elector.acquire())) return;
    leaderGauge.set(1);
    this.startControllers();
    const outcome = await elector.lead();
    leaderGauge.set(0);
    if (outcome !== 'stopped' && !this.shuttingDown) {
      log.error('lost the operator lease: stopping reconciles and exiting');
      await Promise.all(this.controllers.map((c) => c.stop()));
      (this.options.onLostLeadership ?? (() => process.exit(1)))();
    }
  }

  private startControllers(): void {
    for (const c of this.controllers) c.start();
    log.info({ controllers: this.controllers.map((c) => c.name) }, 'controllers started');
  }

  private async startWebhooks(w: NonNullable<ManagerOptions['webhook']>): Promise<void> {
    await w.certificates.ensure();
    this.webhookPort = await w.server.start(w.certificates.serving!, w.port, w.host);
    this.certTimer = setInterval(async () => {
      try {
        if (await w.certificates.ensure()) {
          w.server.updateCertificate(w.certificates.serving!);
          log.info('serving a renewed webhook certificate');
        }
      } catch (err) {
        log.warn({ err: String(err) }, 'could not refresh the webhook certificate');
      }
    }, w.refreshMs ?? 60_000);
    this.certTimer.unref();
  }

  /** Drains in-flight reconciles, releases the Lease, then stops informers and servers. */
  async shutdown(): Promise<void> {
    if (this.shuttingDown) return;
    this.shuttingDown = true;
    await Promise.all(this.controllers.map((c) => c.stop()));
    await this.elector?.release();
    await this.leading;
    leaderGauge.set(0);
    clearInterval(this.certTimer);
    await Promise.all(this.informers.map((i) => i.stop()));
    await this.options.webhook?.server.stop();
    await this.health.stop();
  }
}
