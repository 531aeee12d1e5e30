// A pass-through proxy in front of a real master's admin endpoint that can fail chosen tenant requests,
// or hold one in flight. It exists only to inject what a real master gives no way to provoke on demand:
// one tenant's write failing while the others succeed, or a write still on its way while its sender
// loses the Lease. Everything else reaches the real master unchanged, and every write it passes on is
// recorded with the user agent that sent it and when (the wall clock, as the API server's audit log).
import { createServer, type Server } from 'node:http';
import { freePort } from '../../local/ports.ts';
import { closeServer, listen } from '../../src/kube/listen.ts';
import { wallClockMs } from './audit-log.ts';

export interface ProxiedWrite {
  method: string;
  tenant: string | null;
  userAgent: string;
  /** The request's body as sent (a PUT's requested bytes). */
  body: string;
  /** When it was passed on to the master (ms since the epoch). */
  at: number;
}

/** A request held in flight: when it arrived, and when its sender gave up on it (then it is never passed on). */
export interface HeldRequest {
  userAgent: string;
  receivedAt: number;
  abandonedAt?: number;
}

export class AdminFaultProxy {
  private readonly target: string;
  private readonly faults = new Set<string>();
  private server?: Server;
  private holding: { key: string; arrived: (held: HeldRequest) => void } | undefined;
  private released: PromiseWithResolvers<void> = Promise.withResolvers();
  /** Every write (PUT, DELETE) passed on to the master, in order. */
  readonly writes: ProxiedWrite[] = [];
  port = 0;

  constructor(targetAddress: string) {
    this.target = targetAddress;
  }

  get address(): string {
    return `127.0.0.1:${this.port}`;
  }

  /** Fails `method` requests naming `tenant` with HTTP 500 until cleared. */
  fail(method: 'PUT' | 'DELETE', tenant: string): void {
    this.faults.add(`${method} ${tenant}`);
  }

  clear(): void {
    this.faults.clear();
  }

  /**
   * Holds the next `method` request naming `tenant` as a slow network would: it reaches the master
   * once release() is called, and never if its sender closed the connection first. Resolves when it
   * arrives.
   */
  hold(method: 'PUT' | 'DELETE', tenant: string): Promise<HeldRequest> {
    const arrived = Promise.withResolvers<HeldRequest>();
    this.released = Promise.withResolvers();
    this.holding = { key: `${method} ${tenant}`, arrived: arrived.resolve };
    return arrived.promise;
  }

  /** Lets the held request through (unless its sender gave up on it). */
  release(): void {
    this.released.resolve();
  }

  async start(): Promise<void> {
    this.server = createServer(async (req, res) => {
      const url = new URL(req.url ?? '/', `http://${this.target}`);
      const chunks: Buffer[] = [];
      for await (const c of req) chunks.push(c as Buffer);
      const tenant = url.searchParams.get('tenant_id');
      const userAgent = req.headers['user-agent'] ?? '';
      if (this.faults.has(`${req.method} ${tenant}`)) {
        res.writeHead(500, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ success: false, error_code: -1, error_message: 'injected fault' }));
        return;
      }
      if (this.holding?.key === `${req.method} ${tenant}`) {
        const { arrived } = this.holding;
        this.holding = undefined;
        const held: HeldRequest = { userAgent, receivedAt: wallClockMs() };
        const gone = new Promise<void>((resolve) =>
          res.once('close', () => {
            if (!res.writableFinished) held.abandonedAt ??= wallClockMs();
            resolve();
          }),
        );
        arrived(held);
        await Promise.race([this.released.promise, gone]);
        if (held.abandonedAt !== undefined) return;
      }
      try {
        if (req.method !== 'GET')
          this.writes.push({
            method: req.method!,
            tenant,
            userAgent,
            body: Buffer.concat(chunks).toString(),
            at: wallClockMs(),
          });
        const upstream = await fetch(url, {
          method: req.method,
          headers: { 'content-type': req.headers['content-type'] ?? 'application/json' },
          ...(chunks.length ? { body: Buffer.concat(chunks) } : {}),
        });
        res.writeHead(upstream.status, {
          'content-type': upstream.headers.get('content-type') ?? 'text/plain',
        });
        res.end(Buffer.from(await upstream.arrayBuffer()));
      } catch (err) {
        res.writeHead(502).end(String(err));
      }
    });
    this.port = await listen(this.server, await freePort(), '127.0.0.1');
  }

  async stop(): Promise<void> {
    this.released.resolve();
    if (this.server) await closeServer(this.server);
  }
}
