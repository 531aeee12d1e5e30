// Polls the master's own verdict (`service_ready` on GET /health) while it runs; readiness trusts a
// verdict only while it is fresh, so a hung master turns the replica unready within seconds.
import { setTimeout as sleep } from 'node:timers/promises';
import { StoreAdminClient } from '../store/admin-client.ts';
import { type Health, parseHealth } from '../store/observe.ts';

const pollIntervalMs = 500;
// A new leader's master answers within a second or so: find out soon, as that ends a failover.
const startingPollIntervalMs = 100;
const requestTimeoutMs = 1000;
export const freshForMs = 2000;

export class MasterHealth {
  private readonly admin: StoreAdminClient;
  private lastServingAt: number | undefined;
  private lastAnswer = 'no answer yet';
  /** The master's last verdict, while it answers. */
  last: Health | undefined;
  private stopped = false;

  /** `address`: the master's admin endpoint, `host:port`. */
  constructor(address: string) {
    this.admin = new StoreAdminClient(address, requestTimeoutMs);
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
      await sleep(this.hasServed ? pollIntervalMs : startingPollIntervalMs);
    }
  }

  stop(): void {
    this.stopped = true;
  }

  private async pollOnce(): Promise<void> {
    try {
      const health = parseHealth(await this.admin.getText('/health'));
      this.last = health;
      if (health.serviceReady) this.lastServingAt = performance.now();
      this.lastAnswer = `service_ready=${health.serviceReady}, role=${health.role}, ha_state=${health.haState}`;
    } catch (err) {
      this.last = undefined;
      this.lastAnswer = `GET /health on ${this.admin.address} failed: ${(err as Error).message}`;
    }
  }
}
