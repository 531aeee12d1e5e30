// The operator's request that an etcd-elected replica hand leadership over (a rollout or a drain): it
// holds for the seconds asked and is renewed while the operator still wants it, so a replica whose reason
// to stand aside is gone (an uncordoned node), or whose operator is gone, runs a standby master again.
import { setTimeout as sleep } from 'node:timers/promises';

/** How long one request holds when it names no duration. */
export const stepDownSeconds = 60;

export class StepDownRequests {
  private until = 0;
  private waiters: (() => void)[] = [];

  /** Holds (or extends) the request for `seconds`; wakes whoever waits for one. */
  ask(seconds: number): void {
    this.until = Math.max(this.until, performance.now() + seconds * 1000);
    for (const wake of this.waiters.splice(0)) wake();
  }

  get asked(): boolean {
    return performance.now() < this.until;
  }

  get remainingMs(): number {
    return Math.max(0, this.until - performance.now());
  }

  /** Resolves at the next request. */
  next(): Promise<'asked'> {
    return new Promise((resolve) => this.waiters.push(() => resolve('asked')));
  }

  /** Resolves once no request holds any more, or `stop` settles first. */
  async released(stop: Promise<unknown>): Promise<'released' | 'stopped'> {
    const stopped = stop.then(() => 'stopped' as const);
    while (this.asked) {
      if ((await Promise.race([sleep(this.remainingMs), stopped])) === 'stopped') return 'stopped';
    }
    return 'released';
  }
}
