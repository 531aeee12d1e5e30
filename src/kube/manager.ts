// The operator process's lifecycle: health and metrics, webhooks (served on every replica), informers,
// and the controllers, which run only while this replica holds the operator Lease. Every write the
// process makes is the leader's: the controllers, and the webhook certificates and configurations (see
// webhook-serving.ts); a replica that does not lead only reads. Each term of leadership is a
// LeadershipTerm whose signal every write takes: it ends the moment the Lease is lost (or its renew
// deadline passes), cancelling writes in flight. Shutdown drains in-flight reconciles and releases the
// Lease so a standby takes over at once.

import type { KubeClient } from './client.ts';
import type { Controller } from './controller.ts';
import { HealthServer } from './health-server.ts';
import type { RunnableInformer } from './informer.ts';
import { LeaderElector } from './leader-election.ts';
import { LeadershipTerm } from './leadership-term.ts';
import { log } from './log.ts';
import { leaderElectionStatus } from './metrics.ts';
import { WebhookServing, type WebhookServingOptions } from './webhook-serving.ts';

export interface ManagerOptions {
  /** The client the election uses: its Lease writes are not the term's. */
  client: KubeClient;
  /** The term the process's other writes take (see leadership-term.ts); begun and ended here. */
  term?: LeadershipTerm;
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
  webhook?: WebhookServingOptions;
  /** Called when the Lease is lost; by default the process exits non-zero. */
  onLostLeadership?: () => void;
}

export class Manager {
  private readonly options: ManagerOptions;
  private readonly informers: RunnableInformer[] = [];
  private readonly controllers: Controller[] = [];
  private readonly health = new HealthServer();
  readonly term: LeadershipTerm;
  private elector: LeaderElector | undefined;
  private shuttingDown = false;
  private leadership: Promise<void> | undefined;
  private isLeader = false;
  private controllersStarted = false;
  readonly webhooks: WebhookServing | undefined;
  healthPort: number | undefined;

  constructor(options: ManagerOptions) {
    this.options = options;
    this.term = options.term ?? new LeadershipTerm();
    this.webhooks = options.webhook && new WebhookServing(options.webhook);
  }

  /** Whether this replica runs the controllers: it holds the Lease, or no election runs. */
  get leading(): boolean {
    return this.isLeader || (!this.options.leaderElection && this.controllersStarted);
  }

  private setLeaderStatus(value: 0 | 1): void {
    const name = this.options.leaderElection?.leaseName;
    if (name) leaderElectionStatus.set({ name }, value);
  }

  get webhookPort(): number | undefined {
    return this.webhooks?.port;
  }

  addInformer<T extends RunnableInformer>(informer: T): T {
    this.informers.push(informer);
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
    this.health.addReadiness(() =>
      this.webhooks && !this.webhooks.serving
        ? 'no webhook certificate yet (the leader issues it)'
        : undefined,
    );
    this.setLeaderStatus(0);
    if (o.healthPort !== undefined) this.healthPort = await this.health.start(o.healthPort);
    // Without an election this process is the only writer; with one, it writes once it leads.
    const mayWrite = () => this.isLeader || !o.leaderElection;
    if (!o.leaderElection) this.term.begin();
    if (this.webhooks) await this.webhooks.refresh(mayWrite);
    this.webhooks?.startTimer(mayWrite);
    for (const informer of this.informers) informer.start();
    await Promise.all(this.informers.map((i) => i.waitForSync()));
    if (!o.leaderElection) {
      this.startControllers();
      return;
    }
    const { leaseName, ...election } = o.leaderElection;
    this.elector = new LeaderElector(o.client, { ...election, name: leaseName, identity: o.identity });
    this.leadership = this.lead(this.elector);
  }

  private async lead(elector: LeaderElector): Promise<void> {
    if (!(await elector.acquire())) return;
    this.term.begin(() => elector.standDown ?? Number.NEGATIVE_INFINITY);
    this.isLeader = true;
    this.setLeaderStatus(1);
    // The certificates first, so a fresh install serves admission before the controllers write.
    await this.webhooks
      ?.refresh(() => this.isLeader)
      .catch((err) => log.warn({ err: String(err) }, 'could not settle the webhook certificate'));
    this.startControllers();
    const outcome = await elector.lead();
    // At once, in the same turn as the election decided: a reconcile resumes no write after this.
    this.term.end(`the operator Lease ${outcome === 'stopped' ? 'is being released' : `ended (${outcome})`}`);
    this.isLeader = false;
    this.setLeaderStatus(0);
    if (outcome !== 'stopped' && !this.shuttingDown) {
      log.error('lost the operator lease: stopping reconciles and exiting');
      await Promise.all(this.controllers.map((c) => c.stop()));
      (this.options.onLostLeadership ?? (() => process.exit(1)))();
    }
  }

  private startControllers(): void {
    this.controllersStarted = true;
    for (const c of this.controllers) c.start();
    log.info({ controllers: this.controllers.map((c) => c.name) }, 'controllers started');
  }

  /** Drains in-flight reconciles, releases the Lease, then stops informers and servers. */
  async shutdown(): Promise<void> {
    if (this.shuttingDown) return;
    this.shuttingDown = true;
    await Promise.all(this.controllers.map((c) => c.stop()));
    this.term.end('shutting down');
    await this.elector?.release();
    await this.leadership;
    this.setLeaderStatus(0);
    await Promise.all(this.informers.map((i) => i.stop()));
    await this.webhooks?.stop();
    await this.health.stop();
  }
}
