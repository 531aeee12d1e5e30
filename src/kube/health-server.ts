// Plain-HTTP /healthz, /readyz and /metrics for the operator process.

import { createServer, type Server } from 'node:http';
import { closeServer, listen } from './listen.ts';
import { registry } from './metrics.ts';

export type Check = () => string | undefined;

export class HealthServer {
  private server: Server | undefined;
  private readonly liveness: Check[] = [];
  private readonly readiness: Check[] = [];

  /** A check returns undefined when healthy, or the reason it is not. */
  addLiveness(check: Check): void {
    this.liveness.push(check);
  }

  addReadiness(check: Check): void {
    this.readiness.push(check);
  }

  async start(port: number, host = '0.0.0.0'): Promise<number> {
    this.server = createServer(async (req, res) => {
      const path = (req.url ?? '').split('?')[0];
      if (path === '/metrics') {
        res.writeHead(200, { 'content-type': registry.contentType }).end(await registry.metrics());
        return;
      }
      const checks = path === '/healthz' ? this.liveness : path === '/readyz' ? this.readiness : undefined;
      if (!checks) {
        res.writeHead(404).end();
        return;
      }
      const failures = checks.map((c) => c()).filter((r): r is string => r !== undefined);
      res
        .writeHead(failures.length ? 503 : 200, { 'content-type': 'text/plain' })
        .end(failures.join('\n') || 'ok');
    });
    const server = this.server;
    return listen(server, port, host);
  }

  async stop(): Promise<void> {
    const server = this.server;
    if (!server) return;
    await closeServer(server);
  }
}
