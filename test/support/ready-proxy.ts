// What a ClusterIP Service does for the store's leaders, for tests without a cluster: each new TCP
// connection goes to a leader whose /readyz answers 200 (read every 250 ms, as the kubelet's 1 s probe
// and the endpoints' update would move it); connections already made stay where they are.
import { connect, createServer, type Server, type Socket } from 'node:net';

export interface ProxyTarget {
  /** GET here answers 200 while the target may take connections. */
  readyUrl: string;
  host: string;
  port: number;
}

export class ReadyProxy {
  private readonly server: Server;
  private readonly sockets = new Set<Socket>();
  private readonly timer: NodeJS.Timeout;
  ready: ProxyTarget | undefined;
  /** Where each accepted connection went (undefined: refused, nothing ready). */
  readonly routed: (string | undefined)[] = [];

  readonly host: string;
  readonly port: number;
  private targets: ProxyTarget[];

  private constructor(host: string, port: number, targets: ProxyTarget[]) {
    this.host = host;
    this.port = port;
    this.targets = targets;
    this.server = createServer((client) => this.route(client));
    this.timer = setInterval(() => void this.refresh(), 250);
  }

  static async start(host: string, port: number, targets: ProxyTarget[]): Promise<ReadyProxy> {
    const proxy = new ReadyProxy(host, port, targets);
    await new Promise<void>((resolve, reject) => {
      proxy.server.once('error', reject);
      proxy.server.listen(port, host, resolve);
    });
    await proxy.refresh();
    return proxy;
  }

  get address(): string {
    return `${this.host}:${this.port}`;
  }

  setTargets(targets: ProxyTarget[]): void {
    this.targets = targets;
  }

  private async refresh(): Promise<void> {
    const verdicts = await Promise.all(
      this.targets.map(async (t) => {
        try {
          return (await fetch(t.readyUrl, { signal: AbortSignal.timeout(500) })).status === 200;
        } catch {
          return false;
        }
      }),
    );
    this.ready = this.targets.find((_, i) => verdicts[i]);
  }

  private route(client: Socket): void {
    const target = this.ready;
    this.routed.push(target && `${target.host}:${target.port}`);
    if (!target) {
      client.destroy();
      return;
    }
    const upstream = connect(target.port, target.host);
    for (const s of [client, upstream]) {
      this.sockets.add(s);
      s.on('close', () => this.sockets.delete(s));
    }
    client.pipe(upstream);
    upstream.pipe(client);
    upstream.on('error', () => client.destroy());
    client.on('error', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
    client.on('close', () => upstream.destroy());
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    for (const s of this.sockets) s.destroy();
    await new Promise((resolve) => this.server.close(resolve));
  }
}
