// A pass-through proxy in front of a real master's admin endpoint that can fail chosen tenant requests.
// It exists only to inject a fault a real master gives no way to provoke on demand: one tenant's write
// failing while the others succeed. Everything it does not fail reaches the real master unchanged.
import { createServer, type Server } from 'node:http';
import { freePort } from '../../local/ports.ts';
import { closeServer, listen } from '../../src/kube/listen.ts';

export class AdminFaultProxy {
  private readonly target: string;
  private readonly faults = new Set<string>();
  private server?: Server;
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

  async start(): Promise<void> {
    this.server = createServer(async (req, res) => {
      const url = new URL(req.url ?? '/', `http://${this.target}`);
      const chunks: Buffer[] = [];
      for await (const c of req) chunks.push(c as Buffer);
      if (this.faults.has(`${req.method} ${url.searchParams.get('tenant_id')}`)) {
        res.writeHead(500, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ success: false, error_code: -1, error_message: 'injected fault' }));
        return;
      }
      try {
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
    if (this.server) await closeServer(this.server);
  }
}
