// Every holder a Lease passes through, with when it was seen (a watch, so no brief state is missed).
import type { Lease } from 'kubernetes-types/coordination/v1.js';
import type { KubeClient } from '../../src/kube/client.ts';
import type { KubeObject } from '../../src/kube/object.ts';
import { microTime } from '../../src/kube/time.ts';
import { waitFor } from './wait.ts';

export interface HolderSighting {
  holder: string;
  at: number;
}

export function leaseRef(namespace: string, name: string) {
  return { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', namespace, name };
}

export class LeaseRecorder {
  readonly sightings: HolderSighting[] = [];
  private readonly abort = new AbortController();
  private readonly done: Promise<void>;

  private constructor(client: KubeClient, namespace: string, name: string) {
    this.done = this.record(client, namespace, name).catch(() => {});
  }

  static start(client: KubeClient, namespace: string, name: string): LeaseRecorder {
    return new LeaseRecorder(client, namespace, name);
  }

  get holder(): string | undefined {
    return this.sightings.at(-1)?.holder;
  }

  /** When the Lease was first seen held by `holder` after `since` (performance.now() clock). */
  async waitForHolder(holder: string, since: number, timeoutMs: number): Promise<number> {
    return waitFor(() => this.sightings.find((s) => s.at >= since && s.holder === holder)?.at, {
      what: `the Lease to be held by ${holder} (seen: ${this.sightings.map((s) => s.holder || '<none>')})`,
      timeoutMs,
      intervalMs: 20,
    });
  }

  async stop(): Promise<void> {
    this.abort.abort();
    await this.done;
  }

  private async record(client: KubeClient, namespace: string, name: string): Promise<void> {
    const res = await client.send('GET', `/apis/coordination.k8s.io/v1/namespaces/${namespace}/leases`, {
      query: { watch: 1, fieldSelector: `metadata.name=${name}` },
      signal: this.abort.signal,
      timeoutMs: 0,
    });
    let buffered = '';
    for await (const chunk of res.body) {
      buffered += chunk.toString();
      for (let nl = buffered.indexOf('\n'); nl >= 0; nl = buffered.indexOf('\n')) {
        const line = buffered.slice(0, nl).trim();
        buffered = buffered.slice(nl + 1);
        if (line) this.see((JSON.parse(line) as { object: KubeObject<Lease> }).object);
      }
    }
  }

  private see(lease: KubeObject<Lease>): void {
    const holder = lease.spec?.holderIdentity ?? '';
    if (holder !== this.holder) this.sightings.push({ holder, at: performance.now() });
  }
}

/**
 * Writes another holder into the Lease with a fresh renewTime, as a rival that took it would; with
 * `leaseDurationSeconds`, the rival's own duration (the one a standby then waits out).
 */
export async function takeLease(
  client: KubeClient,
  namespace: string,
  name: string,
  holder: string,
  leaseDurationSeconds?: number,
) {
  await waitFor(
    async () => {
      const lease = await client.get<KubeObject<Lease>>(leaseRef(namespace, name));
      const now = microTime();
      await client.replace<KubeObject<Lease>>({
        ...lease,
        spec: {
          ...lease.spec,
          holderIdentity: holder,
          renewTime: now,
          acquireTime: now,
          ...(leaseDurationSeconds ? { leaseDurationSeconds } : {}),
        },
      });
      return true;
    },
    { what: `the Lease ${namespace}/${name} to be overwritten`, timeoutMs: 10_000, intervalMs: 50 },
  );
}
