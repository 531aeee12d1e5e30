// Leader election on a coordination.k8s.io Lease with client-go's semantics: a candidate takes the
// Lease only when its record has not changed, by the candidate's own clock, for leaseDuration (so
// clock skew does not matter); the leader renews every retryPeriod and gives up when it could not
// renew for renewDeadline; a graceful release empties the holder so a standby takes over at once.
import { setTimeout as sleep } from 'node:timers/promises';
import type { KubeClient } from './client.ts';
import { ApiError } from './errors.ts';
import { log } from './log.ts';
import type { KubeObject } from './object.ts';
import { microTime } from './time.ts';

export interface LeaseSpec {
  holderIdentity?: string;
  leaseDurationSeconds?: number;
  acquireTime?: string;
  renewTime?: string;
  leaseTransitions?: number;
}

export type Lease = KubeObject & { spec?: LeaseSpec };

export interface LeaderElectionOptions {
  namespace: string;
  name: string;
  identity: string;
  leaseDurationMs?: number;
  renewDeadlineMs?: number;
  retryPeriodMs?: number;
}

export const defaultTimings = { leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000 };

export class LeaderElector {
  private readonly client: KubeClient;
  private readonly options: Required<LeaderElectionOptions>;
  private observed: { record: string; at: number } | undefined;
  private lease: Lease | undefined;
  private holder: string | undefined;
  private leading = false;
  private stopped = false;
  private attempt: Promise<boolean> = Promise.resolve(false);
  private readonly logger;

  constructor(client: KubeClient, options: LeaderElectionOptions) {
    this.client = client;
    this.options = { ...defaultTimings, ...options };
    const { leaseDurationMs, renewDeadlineMs, retryPeriodMs } = this.options;
    if (!(leaseDurationMs > renewDeadlineMs && renewDeadlineMs > 1.2 * retryPeriodMs)) {
      throw new Error('leader election needs leaseDuration > renewDeadline > 1.2 × retryPeriod');
    }
    this.logger = log.child({ lease: `${options.namespace}/${options.name}`, identity: options.identity });
  }

  private get ref() {
    return {
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      namespace: this.options.namespace,
      name: this.options.name,
    };
  }

  /** The holder the last attempt read (this candidate after a win), so callers need no Lease reads of their own. */
  get observedHolder(): string | undefined {
    return this.holder;
  }

  /** Campaigns until this candidate leads; resolves false if stop() came first. */
  async acquire(): Promise<boolean> {
    while (!this.stopped) {
      if (await this.try()) {
        this.leading = true;
        this.logger.info('became leader');
        return true;
      }
      await sleep(this.options.retryPeriodMs * (1 + Math.random() * 0.2));
    }
    return false;
  }

  /** Renews until a renewal fails for renewDeadline (resolves 'lost') or stop() (resolves 'stopped'). */
  async renewUntilLost(): Promise<'lost' | 'stopped'> {
    let lastRenew = performance.now();
    while (!this.stopped) {
      await sleep(this.options.retryPeriodMs);
      if (this.stopped) break;
      if (await this.try()) {
        lastRenew = performance.now();
      } else if (performance.now() - lastRenew > this.options.renewDeadlineMs) {
        this.leading = false;
        this.logger.error('could not renew the lease within the renew deadline; leadership lost');
        return 'lost';
      }
    }
    return 'stopped';
  }

  /** Stops campaigning and renewing; a leader empties the holder so a standby takes over at once. */
  async release(): Promise<void> {
    this.stopped = true;
    // A renewal still in flight would overwrite the release: let it land first.
    await this.attempt;
    if (!this.leading || !this.lease) return;
    this.leading = false;
    const now = microTime();
    try {
      await this.client.replace<Lease>({
        ...this.lease,
        spec: {
          ...this.lease.spec,
          holderIdentity: '',
          leaseDurationSeconds: 1,
          renewTime: now,
          acquireTime: now,
        },
      });
      this.holder = '';
      this.logger.info('released the lease');
    } catch (err) {
      this.logger.warn({ err: String(err) }, 'could not release the lease; it expires on its own');
    }
  }

  private try(): Promise<boolean> {
    this.attempt = this.tryAcquireOrRenew();
    return this.attempt;
  }

  private async tryAcquireOrRenew(): Promise<boolean> {
    const me = this.options.identity;
    const now = microTime();
    const durationSeconds = Math.round(this.options.leaseDurationMs / 1000);
    try {
      const current = await this.client.find<Lease>(this.ref);
      this.holder = current?.spec?.holderIdentity;
      if (!current) {
        this.lease = await this.client.create<Lease>({
          ...this.ref,
          metadata: { name: this.options.name, namespace: this.options.namespace },
          spec: {
            holderIdentity: me,
            leaseDurationSeconds: durationSeconds,
            acquireTime: now,
            renewTime: now,
            leaseTransitions: 0,
          },
        } as Lease);
        this.holder = me;
        return true;
      }
      const spec = current.spec ?? {};
      const record = JSON.stringify([
        spec.holderIdentity,
        spec.renewTime,
        spec.acquireTime,
        spec.leaseTransitions,
      ]);
      if (this.observed?.record !== record) this.observed = { record, at: performance.now() };
      const held = Boolean(spec.holderIdentity) && spec.holderIdentity !== me;
      const validForMs = (spec.leaseDurationSeconds ?? durationSeconds) * 1000;
      if (held && performance.now() < this.observed.at + validForMs) return false;
      const takingOver = spec.holderIdentity !== me;
      this.lease = await this.client.replace<Lease>({
        ...current,
        spec: {
          holderIdentity: me,
          leaseDurationSeconds: durationSeconds,
          acquireTime: takingOver ? now : spec.acquireTime,
          renewTime: now,
          leaseTransitions: (spec.leaseTransitions ?? 0) + (takingOver ? 1 : 0),
        },
      });
      this.holder = me;
      return true;
    } catch (err) {
      if (!(err instanceof ApiError && (err.isConflict || err.isAlreadyExists))) {
        this.logger.warn({ err: String(err) }, 'lease request failed');
      }
      return false;
    }
  }
}
