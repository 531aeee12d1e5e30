// A TCP relay between one process and the real kube-apiserver, switched to inject a network fault the
// tests could not produce otherwise without stopping an apiserver other tests share:
// - 'refuse': connections are reset and new ones refused, as while an apiserver restarts;
// - 'hang': nothing passes either way, as while packets are dropped. As with TCP across a healed
//   partition, bytes sent on an established connection arrive once traffic passes again, and a
//   connection opened meanwhile reaches the apiserver then, unless its client gave up first.
import { readFileSync, writeFileSync } from 'node:fs';
import { createConnection, createServer, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import { parse, stringify } from 'yaml';
import { freePort } from '../../local/ports.ts';

export type RelayMode = 'pass' | 'refuse' | 'hang';

interface Pair {
  client: Socket;
  upstream: Socket | undefined;
  /** Bytes held while hanging, each way. */
  toServer: Buffer[];
  toClient: Buffer[];
  /** The client closed its side while hanging; passed on after what it sent. */
  clientEnded: boolean;
}

export class ApiRelay {
  readonly port: number;
  private readonly target: { host: string; port: number };
  private readonly pairs = new Set<Pair>();
  /** Every socket this relay opened or accepted, so closing it leaves none behind. */
  private readonly sockets = new Set<Socket>();
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
    if (mode === 'pass') for (const pair of this.pairs) this.release(pair);
  }

  async close(): Promise<void> {
    for (const pair of this.pairs) this.drop(pair);
    // A socket ended but not closed by its peer would keep the server (and the test process) open.
    for (const socket of this.sockets) socket.destroy();
    await this.stopListening();
  }

  private async listen(): Promise<void> {
    const server = createServer({ allowHalfOpen: true }, (client) => this.accept(client));
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
    this.track(client);
    const pair: Pair = { client, upstream: undefined, toServer: [], toClient: [], clientEnded: false };
    this.pairs.add(pair);
    client.on('data', (chunk) => {
      if (this.current === 'pass' && pair.upstream) pair.upstream.write(chunk);
      else pair.toServer.push(chunk);
    });
    client.on('end', () => {
      if (this.current === 'pass') pair.upstream?.end();
      // A connection that never reached the apiserver is gone with its client, as an unanswered SYN is.
      else if (!pair.upstream) this.drop(pair);
      else pair.clientEnded = true;
    });
    client.on('error', () => this.drop(pair));
    client.on('close', () => {
      if (this.current === 'pass' || !pair.upstream) this.drop(pair, false);
    });
    if (this.current === 'pass') this.release(pair);
  }

  private connectUpstream(pair: Pair): Socket {
    const upstream = this.track(createConnection({ ...this.target, allowHalfOpen: true }));
    upstream.on('data', (chunk) => {
      if (this.current === 'pass') pair.client.write(chunk);
      else pair.toClient.push(chunk);
    });
    upstream.on('end', () => {
      if (this.current === 'pass') pair.client.end();
    });
    upstream.on('error', () => this.drop(pair));
    upstream.on('close', () => {
      if (this.current === 'pass') this.drop(pair, false);
    });
    pair.upstream = upstream;
    return upstream;
  }

  private track(socket: Socket): Socket {
    this.sockets.add(socket);
    socket.once('close', () => this.sockets.delete(socket));
    return socket;
  }

  /** Lets what was held through, both ways. */
  private release(pair: Pair): void {
    const upstream = pair.upstream ?? this.connectUpstream(pair);
    for (const chunk of pair.toServer.splice(0)) upstream.write(chunk);
    for (const chunk of pair.toClient.splice(0)) if (!pair.client.destroyed) pair.client.write(chunk);
    if (pair.clientEnded) upstream.end();
    if (pair.client.destroyed && !pair.clientEnded) this.drop(pair);
  }

  /** Forgets a connection: reset both sides (a fault), or let them finish what they were sending. */
  private drop(pair: Pair, reset = true): void {
    if (!this.pairs.delete(pair)) return;
    for (const socket of [pair.client, pair.upstream]) {
      if (!socket || socket.destroyed) continue;
      if (!reset) socket.end();
      else if (ending(socket)) socket.destroy();
      else socket.resetAndDestroy();
    }
  }
}

/**
 * Whether the socket's own end is under way (ended, not yet finished). A reset then fails (EINVAL), yet
 * Node counts the handle as closing and never closes it: the process spins in its exit-time cleanup.
 */
function ending(socket: Socket): boolean {
  return socket.writableEnded && !socket.writableFinished;
}

function kubeconfigServer(kubeconfig: string): string {
  const config = parse(readFileSync(kubeconfig, 'utf8')) as { clusters: { cluster: { server: string } }[] };
  const server = config.clusters[0]?.cluster.server;
  if (!server) throw new Error(`${kubeconfig} names no cluster server`);
  return server;
}
