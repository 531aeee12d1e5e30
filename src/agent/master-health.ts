// Polls the master's own verdict (`service_ready` on GET /health) while it runs; readiness trusts a
// verdict only while it is fresh, so a hung master turns the replica unready within seconds.
import { setTimeout as sleep } from 'node:timers/promises';

const pollIntervalMs = 500;
const requestTimeoutMs = 1000;
export const freshForMs = 2000;

export class MasterHealth {
  private readonly url: string;
  private lastServingAt: number | undefined;
  private lastAnswer = 'no answer yet';
  private stopped = false;

  constructor(adminBase: string) {
    this.url = `${adminBase}/health`;
  }

  /** Whether the master said `service_ready: true` within the last two seconds. */
  get serving(): boolean {
    return this.lastServingAt !== undefined && performance.now() - this.lastServingAt <= freshForMs;
  }

  /** Whether the master has ever been serving (to tell "starting" from "stopped serving"). */
  get hasServed(): boolean {
    return this.lastServingAt !== undefined;
  }

  /** What the master last said, for a readiness reason. */
  get detail(): string {
    return this.lastAnswer;
  }

  /** Polls until stop(); never throws. */
  async run(): Promise<void> {
    while (!this.stopped) {
      await this.pollOnce();
      await sleep(pollIntervalMs);
    }
  }

  stop(): void {
    this.stopped = true;
  }

  private async pollOnce(): Promise<void> {
    try {
      const res = await fetch(this.url, { signal: AbortSignal.timeout(requestTimeoutMs) });
      const body = (await res.json()) as { service_ready?: boolean; role?: string; ha_state?: string };
      if (body.service_ready === true) this.lastServingAt = performance.now();
      this.lastAnswer = `service_ready=${body.service_ready}, role=${body.role}, ha_state=${body.ha_state}`;
    } catch (err) {
      this.lastAnswer = `GET ${this.url} failed: ${(err as Error).message}`;
    }
  }
}
