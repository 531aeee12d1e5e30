// One Service port's listener: accepts TCP connections on the Service's proxy address and forwards each
// to a ready backend, round robin, trying the next backend when one refuses; an error on either side
// closes both.
import { connect, createServer, type Server, type Socket } from 'node:net';
import type { Logger } from '../../kube/log.ts';
import type { Backend } from './endpoints.ts';

const connectTimeoutMs = 3000;
const relistenMs = 3000;

export class PortForwarder {
  readonly address: string;
  readonly port: number;
  private readonly backends: () => Backend[];
  private readonly logger: Logger;
  private readonly server: Server;
  private readonly sockets = new Set<Socket>();
  private next = 0;
  private closed = false;
  private retry: NodeJS.Timeout | undefined;

  constructor(address: string, port: number, backends: () => Backend[], logger: Logger) {
    this.address = address;
    this.port = port;
    this.backends = backends;
    this.logger = logger;
    this.server = createServer({ allowHalfOpen: true }, (client) => this.accept(client));
    this.server.on('error', (err) => {
      this.logger.warn({ address, port, err: err.message }, 'cannot listen; retrying');
      this.retry = setTimeout(() => this.listen(), relistenMs);
    });
    this.listen();
  }

  private listen(): void {
    if (this.closed) return;
    this.server.listen({ host: this.address, port: this.port });
  }

  private track(socket: Socket): void {
    this.sockets.add(socket);
    socket.once('close', () => this.sockets.delete(socket));
  }

  private accept(client: Socket): void {
    this.track(client);
    client.pause();
    const candidates = this.backends();
    if (!candidates.length) {
      client.destroy();
      return;
    }
    const start = this.next++ % candidates.length;
    const order = candidates.map((_, i) => candidates[(start + i) % candidates.length]!);
    this.dial(client, order);
  }

  private dial(client: Socket, order: Backend[]): void {
    const backend = order.shift();
    if (!backend || client.destroyed) {
      client.destroy();
      return;
    }
    const upstream = connect({
      host: backend.host,
      port: backend.port,
      timeout: connectTimeoutMs,
      allowHalfOpen: true,
    });
    this.track(upstream);
    const onConnectError = () => {
      upstream.destroy();
      this.dial(client, order);
    };
    upstream.once('error', onConnectError);
    upstream.once('timeout', onConnectError);
    upstream.once('connect', () => {
      upstream.off('error', onConnectError);
      upstream.off('timeout', onConnectError);
      upstream.setTimeout(0);
      const closeBoth = () => {
        client.destroy();
        upstream.destroy();
      };
      upstream.on('error', closeBoth);
      client.on('error', closeBoth);
      upstream.on('close', closeBoth);
      client.on('close', closeBoth);
      client.pipe(upstream);
      upstream.pipe(client);
      client.resume();
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.retry);
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
