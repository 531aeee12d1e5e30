// Keeps a replica's webhook server serving the pair in the certificate Secret. Every replica serves;
// only the leader writes: it issues and rotates the certificates, patches the CA bundle and (when asked)
// registers the webhook configurations. A replica that does not lead reads the Secret, and starts
// serving once the leader has written it, so no two replicas race each other's writes.
import { log } from './log.ts';
import type { WebhookCertificates } from './webhook-certs.ts';
import type { WebhookServer } from './webhook-server.ts';

export interface WebhookServingOptions {
  server: WebhookServer;
  certificates: WebhookCertificates;
  port: number;
  host?: string;
  /** How often the certificate Secret is re-read (rotation, the leader's renewals); 60 s by default. */
  refreshMs?: number;
  /** Called on the leader whenever the CA bundle it settled differs from the one last registered. */
  onLeaderCertificates?: (caBundle: string) => Promise<void>;
}

export class WebhookServing {
  private readonly o: WebhookServingOptions;
  private chain: Promise<void> = Promise.resolve();
  private timer: NodeJS.Timeout | undefined;
  private registered: string | undefined;
  /** The certificate the webhook server was last given. */
  private served: string | undefined;
  private stopped = false;
  private reschedule: (() => void) | undefined;
  /** The port served on, once a certificate exists. */
  port: number | undefined;
  /** Completed refreshes (a replica's evidence that it looked at the Secret). */
  refreshes = 0;

  constructor(options: WebhookServingOptions) {
    this.o = options;
  }

  get serving(): boolean {
    return this.port !== undefined;
  }

  /**
   * One refresh, serialized with every other: as the leader it may write, otherwise it only reads.
   * Leadership is asked when the refresh runs: one queued behind another may outlive the Lease.
   */
  refresh(isLeader: () => boolean): Promise<void> {
    const next = this.chain.then(() => this.refreshOnce(isLeader));
    this.chain = next.catch(() => undefined);
    return next;
  }

  /** Refreshes every refreshMs, or every second until a certificate is served. */
  startTimer(isLeader: () => boolean): void {
    const tick = () => {
      clearTimeout(this.timer);
      if (this.stopped) return;
      const delay = this.serving ? (this.o.refreshMs ?? 60_000) : Math.min(1000, this.o.refreshMs ?? 1000);
      this.timer = setTimeout(async () => {
        try {
          await this.refresh(isLeader);
        } catch (err) {
          log.warn({ err: String(err) }, 'could not refresh the webhook certificate');
        }
        tick();
      }, delay);
      this.timer.unref();
    };
    this.reschedule = tick;
    tick();
  }

  private async refreshOnce(isLeader: () => boolean): Promise<void> {
    const c = this.o.certificates;
    try {
      if (isLeader()) await c.ensure();
      else await c.load();
    } finally {
      // A pass that wrote a new pair and then failed (a refused CA bundle patch) still serves that pair.
      await this.serveCurrent();
    }
    if (isLeader() && this.o.onLeaderCertificates && c.caBundle && c.caBundle !== this.registered) {
      await this.o.onLeaderCertificates(c.caBundle);
      this.registered = c.caBundle;
    }
    this.refreshes += 1;
  }

  /** Serves the pair the certificates hold (the Secret as last read or written), compared every pass. */
  private async serveCurrent(): Promise<void> {
    const cert = this.o.certificates.serving;
    if (!cert) return;
    if (this.port === undefined) {
      this.port = await this.o.server.start(cert, this.o.port, this.o.host);
      log.info({ port: this.port }, 'serving admission webhooks');
      // A one-second retry armed before this pass would refresh (and, leading, write) once more.
      this.reschedule?.();
    } else if (cert.certPem !== this.served) {
      this.o.server.updateCertificate(cert);
      log.info('serving a renewed webhook certificate');
    }
    this.served = cert.certPem;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.chain;
    await this.o.server.stop();
  }
}
