// A counting proxy in front of a master's admin port: every request is forwarded as it came and its
// answer returned as it came; the proxy only counts requests by method and path.
import { Agent, createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export class CountingProxy {
  readonly counts = new Map<string, number>();
  private readonly server: Server;
  private readonly agent = new Agent({ keepAlive: true });

  private constructor(target: { host: string; port: number }) {
    this.server = createServer((req, res) => {
      const key = `${req.method} ${(req.url ?? '').split('?')[0]}`;
      this.counts.set(key, (this.counts.get(key) ?? 0) + 1);
      const upstream = request(
        { ...target, agent: this.agent, method: req.method, path: req.url, headers: req.headers },
        (answer) => {
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(res);
        },
      );
      upstream.on('error', (err) => res.destroy(err));
      req.pipe(upstream);
    });
  }

  /** Listens on a free loopback port in front of `target` (`host:port`). */
  static async start(target: string): Promise<CountingProxy> {
    const [host, port] = target.split(':') as [string, string];
    const proxy = new CountingProxy({ host, port: Number(port) });
    await new Promise<void>((resolve) => proxy.server.listen(0, '127.0.0.1', resolve));
    return proxy;
  }

  get address(): string {
    return `127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  snapshot(): Map<string, number> {
    return new Map(this.counts);
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise((resolve) => this.server.close(resolve));
    this.agent.destroy();
  }
}

/** The requests counted between two snapshots, by `METHOD path`. */
export function countsSince(before: Map<string, number>, after: Map<string, number>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [k, v] of after) if (v - (before.get(k) ?? 0) > 0) out[k] = v - (before.get(k) ?? 0);
  return out;
}
