// What a leader replica is doing, and the readiness and liveness verdicts that follow from it.
import type { Child } from './child.ts';
import type { MasterHealth } from './master-health.ts';
import type { ProbeChecks, Verdict } from './probe-server.ts';

export type LeaderPhase = 'campaigning' | 'seeding' | 'running' | 'stopping';

export class LeaderStatus {
  phase: LeaderPhase;
  /** The Lease holder last seen while campaigning ('' for none). */
  holder = '';
  master: Child | undefined;
  health: MasterHealth | undefined;
  private readonly lease: string | undefined;

  /** `lease` is `<namespace>/<name>` with an election, undefined without one. */
  constructor(lease: string | undefined) {
    this.lease = lease;
    this.phase = lease ? 'campaigning' : 'seeding';
  }

  ready(): Verdict {
    if (this.phase === 'stopping') return { ok: false, reason: 'shutting down' };
    if (this.phase === 'campaigning') {
      return {
        ok: false,
        reason: this.holder
          ? `standby: the Lease is held by ${this.holder}`
          : `standby: campaigning for the Lease ${this.lease}`,
      };
    }
    if (!this.master || !this.health)
      return { ok: false, reason: 'master starting: seeding the tenant policy' };
    if (!this.master.running) return { ok: false, reason: 'mooncake_master exited' };
    if (!this.health.serving) {
      const state = this.health.hasServed ? 'master not serving' : 'master starting';
      return { ok: false, reason: `${state}: ${this.health.detail}` };
    }
    return { ok: true, reason: this.lease ? `leader of ${this.lease}: master serving` : 'master serving' };
  }

  healthy(): Verdict {
    if (this.phase === 'stopping') return { ok: false, reason: 'shutting down' };
    if (this.master && !this.master.running) return { ok: false, reason: 'mooncake_master exited' };
    return { ok: true, reason: 'ok' };
  }

  get checks(): ProbeChecks {
    return { ready: () => this.ready(), healthy: () => this.healthy() };
  }
}
