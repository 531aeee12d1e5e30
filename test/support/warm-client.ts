// Drives one warm_client.py process: the real Mooncake client library, set up once and kept alive
// across a failover, writing objects and then polling their keys (see that file for the events). Used
// by the failover tests and bench.
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { mooncakeBinary } from '../../local/toolchain.ts';
import { WaitAborted, waitFor } from '../../src/kube/wait-for.ts';

export interface Hit {
  key: string;
  /** ms since the epoch */
  at: number;
  /** Read back with the bytes written under the key. */
  ok: boolean;
}

export interface ClientEvent {
  event: 'setup' | 'put' | 'written' | 'error' | 'answered' | 'hit' | 'done';
  at: number;
  rc?: number;
  ok?: number | boolean;
  failed?: string[];
  present?: number;
  key?: string;
  reason?: string;
  /** A put's latency (with eachPut). */
  ms?: number;
}

export interface WarmClientOptions {
  /** The master's RPC address, IP:port. */
  master: string;
  /** This machine's address on the cluster's network. */
  host: string;
  size: number;
  put?: { prefix: string; count: number; intervalMs?: number; eachPut?: boolean };
  /** Keep trying to set up until then (ms since the epoch): the master may not serve yet. */
  setupUntil: number;
}

export class WarmClient {
  readonly events: ClientEvent[] = [];
  readonly master: string;
  private readonly child: ChildProcessWithoutNullStreams;
  private stderr = '';
  exitCode: number | null | undefined;

  constructor(options: WarmClientOptions) {
    this.master = options.master;
    const args = [
      join(import.meta.dirname, 'warm_client.py'),
      '--master',
      options.master,
      '--host',
      options.host,
      '--size',
      String(options.size),
      '--setup-until',
      String(options.setupUntil),
    ];
    if (options.put) args.push('--put', options.put.prefix, String(options.put.count));
    if (options.put?.intervalMs) args.push('--put-interval-ms', String(options.put.intervalMs));
    if (options.put?.eachPut) args.push('--each-put');
    this.child = spawn(mooncakeBinary('python'), args, { stdio: ['pipe', 'pipe', 'pipe'] });
    this.child.stdin.on('error', () => {});
    createInterface({ input: this.child.stdout }).on('line', (line) => {
      if (line.startsWith('{"event"')) this.events.push(JSON.parse(line) as ClientEvent);
    });
    this.child.stderr.on('data', (d) => {
      this.stderr = (this.stderr + d).slice(-4000);
    });
    this.child.on('exit', (code) => {
      this.exitCode = code;
    });
  }

  get exited(): boolean {
    return this.exitCode !== undefined;
  }

  find(event: ClientEvent['event']): ClientEvent | undefined {
    return this.events.find((e) => e.event === event);
  }

  /** The latency of every acknowledged put, in ms (with eachPut). */
  putLatencies(): number[] {
    return this.events.filter((e) => e.event === 'put' && e.rc === 0).map((e) => e.ms!);
  }

  /** Keys whose put the master acknowledged (with eachPut). */
  acknowledged(): string[] {
    return this.events.filter((e) => e.event === 'put' && e.rc === 0).map((e) => e.key!);
  }

  hits(): Hit[] {
    return this.events
      .filter((e) => e.event === 'hit')
      .map((e) => ({ key: e.key!, at: e.at, ok: e.ok === true }));
  }

  /** Waits for an event; fails at once if the process ends without it, with the end of its stderr. */
  async next(event: ClientEvent['event'], timeoutMs: number): Promise<ClientEvent> {
    return waitFor(
      () => {
        const e = this.find(event);
        if (!e && this.exited)
          throw new WaitAborted(
            `client of ${this.master} exited ${this.exitCode} before '${event}': ${this.stderr}`,
          );
        return e;
      },
      { what: `'${event}' from the client of ${this.master}`, timeoutMs, intervalMs: 50 },
    ).catch((err: Error) => {
      throw new Error(`${err.message}; stderr: ${this.stderr.slice(-1500)}`);
    });
  }

  poll(keys: string[], untilMs: number): void {
    this.child.stdin.write(`${JSON.stringify({ keys, untilMs })}\n`);
  }

  /** Ends the polling, and the process within 5 s. */
  async stop(): Promise<void> {
    if (this.exited) return;
    this.child.stdin.write('stop\n');
    await waitFor(() => (this.exited ? true : undefined), {
      what: 'the client to exit',
      timeoutMs: 5000,
      intervalMs: 50,
    }).catch(() => this.child.kill('SIGKILL'));
  }

  tail(): string {
    return this.stderr.slice(-1500);
  }
}
