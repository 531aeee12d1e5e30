// A TCP relay between one process and the real kube-apiserver, switched to inject a network fault the
// tests could not produce otherwise without stopping an apiserver other tests share:
// - 'refuse': connections are reset and new ones refused, as while an apiserver restarts;
// - 'hang': nothing passes either way and new connections wait, as while packets are dropped; what
//   was sent meanwhile is delivered once it passes again, as TCP retransmission would.
import { readFileSync, writeFileSync } from 'node:fs';
import { createConnection, createServer, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import { parse, stringify } from 'yaml';
import { freePort } from '../../src/local/ports.ts';

export type RelayMode = 'pass' | 'refuse' | 'hang';

interface Pair {
  client: Socket;
  upstream: Socket | undefined;
}

export class ApiRelay {
  readonly port: number;
  private readonly target: { host: string; port: number };
  private readonly pairs = new Set<Pair>();
  private server: Server | undefined;
  private current: RelayMode = 'pass';

  private constructor(port: number, target: { host: string; port: number }) {
    this.port = port;
    this.target = target;
  }

  /** A relay to the apiserver `kubeconfig` names, passing traffic until told otherwise. */
  static async start(kubeconfig: string): Promise<ApiRelay> {
    const server = new URL(kubeconfigServer(kubeconfig));
    const relay = new ApiRelay(await freePort(), { host: server.hostname, port: Number(server.port) });
    await relay.listen();
    return relay;
  }

  get mode(): RelayMode {
    return this.current;
  }

  /** A copy of `kubeconfig` in `dir` that reaches the apiserver through this relay. */
  kubeconfigThrough(kubeconfig: string, dir: string): string {
    const config = parse(readFileSync(kubeconfig, 'utf8')) as { clusters: { cluster: { server: string } }[] };
    for (const c of config.clusters) {
      const url = new URL(c.cluster.server);
      url.port = String(this.port);
      c.cluster.server = url.toString().replace(/\/$/, '');
    }
    const path = join(dir, `kubeconfig-relay-${this.port}`);
    writeFileSync(path, stringify(config), { mode: 0o600 });
    return path;
  }

  async set(mode: RelayMode): Promise<void> {
    if (mode === this.current) return;
    const was = this.current;
    this.current = mode;
    if (mode === 'refuse') {
      // Reset first: a closing server waits for its open connections.
      for (const pair of this.pairs) this.drop(pair);
      await this.stopListening();
      return;
    }
    if (was === 'refuse') await this.listen();
    if (mode === 'pass') for (const pair of this.pairs) this.thaw(pair);
    else for (const pair of this.pairs) this.freeze(pair);
  }

  async close(): Promise<void> {
    for (const pair of this.pairs) this.drop(pair);
    await this.stopListening();
  }

  private async listen(): Promise<void> {
    const server = createServer((client) => this.accept(client));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.port, '127.0.0.1', () => resolve());
    });
    this.server = server;
  }

  private async stopListening(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  private accept(client: Socket): void {
    const pair: Pair = { client, upstream: undefined };
    this.pairs.add(pair);
    client.on('error', () => this.drop(pair));
    client.on('close', () => this.drop(pair));
    client.on('data', (chunk) => pair.upstream?.write(chunk));
    client.pause();
    if (this.current === 'pass') this.thaw(pair);
  }

  private connectUpstream(pair: Pair): Socket {
    const upstream = createConnection(this.target);
    upstream.on('data', (chunk) => pair.client.write(chunk));
    upstream.on('error', () => this.drop(pair));
    upstream.on('close', () => this.drop(pair));
    pair.upstream = upstream;
    return upstream;
  }

  private thaw(pair: Pair): void {
    (pair.upstream ?? this.connectUpstream(pair)).resume();
    pair.client.resume();
  }

  private freeze(pair: Pair): void {
    pair.client.pause();
    pair.upstream?.pause();
  }

  private drop(pair: Pair): void {
    if (!this.pairs.delete(pair)) return;
    pair.client.resetAndDestroy();
    pair.upstream?.resetAndDestroy();
  }
}

function kubeconfigServer(kubeconfig: string): string {
  const config = parse(readFileSync(kubeconfig, 'utf8')) as { clusters: { cluster: { server: string } }[] };
  const server = config.clusters[0]?.cluster.server;
  if (!server) throw new Error(`${kubeconfig} names no cluster server`);
  return server;
}
