// What a leader replica is doing, and the readiness and liveness verdicts that follow from it.
import type { Child } from './child.ts';
import type { MasterHealth } from './master-health.ts';
import type { ProbeChecks, Verdict } from './probe-server.ts';

export type LeaderPhase = 'campaigning' | 'seeding' | 'running' | 'stopping';

/** The Lease's age and the time left to lead on it, as the elector reports them. */
export type LeaseFreshness = () => { ageMs: number; remainingMs: number; fresh: boolean } | undefined;

export class LeaderStatus {
  phase: LeaderPhase;
  /** The Lease holder last seen while campaigning ('' for none). */
  holder = '';
  /** While campaigning: the Lease asks this replica to stay out (it handed over for a rollout or a drain). */
  steppedDown = false;
  master: Child | undefined;
  health: MasterHealth | undefined;
  /** With an election: how fresh this replica's hold on the Lease is. */
  freshness: LeaseFreshness | undefined;
  private readonly lease: string | undefined;

  private readonly etcd: boolean;

  /** `lease` is `<namespace>/<name>` with a Lease election, undefined without one; `etcd`: etcd elects the masters. */
  constructor(lease: string | undefined, etcd = false) {
    this.lease = lease;
    this.etcd = etcd;
    this.phase = lease ? 'campaigning' : 'seeding';
  }

  ready(): Verdict {
    if (this.etcd && this.steppedDown)
      return {
        ok: false,
        reason: 'stepped down: asked to hand over (a rollout or a drain); running no master',
      };
    if (this.phase === 'stopping') return { ok: false, reason: 'shutting down' };
    if (this.phase === 'campaigning') return { ok: false, reason: this.standbyReason() };
    // Serving ends with the Lease's hold, even before the master is stopped.
    const hold = this.lease ? this.freshness?.() : undefined;
    if (this.lease && !hold?.fresh) {
      return { ok: false, reason: `the Lease ${this.lease} was not renewed in time: stopping the master` };
    }
    if (!this.master || !this.health)
      return { ok: false, reason: 'master starting: seeding the tenant policy' };
    if (!this.master.running) return { ok: false, reason: 'mooncake_master exited' };
    if (!this.health.serving) {
      const standby = this.etcd && this.health.last?.role === 'standby';
      if (standby) {
        const leader = this.health.last?.leaderAddress;
        return { ok: false, reason: `standby: following the OpLog${leader ? ` of ${leader}` : ''} in etcd` };
      }
      const state = this.health.hasServed ? 'master not serving' : 'master starting';
      return { ok: false, reason: `${state}: ${this.health.detail}` };
    }
    if (!this.lease || !hold) return { ok: true, reason: 'master serving' };
    const age = (hold.ageMs / 1000).toFixed(1);
    const left = (hold.remainingMs / 1000).toFixed(1);
    return {
      ok: true,
      reason: `leader of ${this.lease}: master serving; Lease renewed ${age} s ago, serving on it for ${left} s more`,
    };
  }

  healthy(): Verdict {
    if (this.phase === 'stopping') return { ok: false, reason: 'shutting down' };
    if (this.master && !this.master.running && this.phase === 'running')
      return { ok: false, reason: 'mooncake_master exited' };
    return { ok: true, reason: 'ok' };
  }

  get checks(): ProbeChecks {
    return { ready: () => this.ready(), healthy: () => this.healthy() };
  }

  private standbyReason(): string {
    const held = this.holder
      ? `the Lease is held by ${this.holder}`
      : `campaigning for the Lease ${this.lease}`;
    return this.steppedDown
      ? `stepped down: the Lease asks this Pod to hand over (a rollout or a drain); ${held}`
      : `standby: ${held}`;
  }
}
