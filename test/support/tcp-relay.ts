// A TCP relay a test can cut: every connection to it is carried to one target until cut(), which drops
// the connections it carries and refuses new ones (a network partition between two processes).
import { connect, createServer, type Server, type Socket } from 'node:net';

export class TcpRelay {
  private readonly server: Server;
  private readonly sockets = new Set<Socket>();
  private severed = false;
  readonly host: string;
  readonly port: number;

  private constructor(host: string, port: number, target: { host: string; port: number }) {
    this.host = host;
    this.port = port;
    this.server = createServer((inbound) => {
      if (this.severed) {
        inbound.destroy();
        return;
      }
      const outbound = connect(target.port, target.host);
      for (const s of [inbound, outbound]) {
        this.sockets.add(s);
        s.on('close', () => this.sockets.delete(s));
        s.on('error', () => undefined);
      }
      inbound.pipe(outbound);
      outbound.pipe(inbound);
      inbound.on('close', () => outbound.destroy());
      outbound.on('close', () => inbound.destroy());
    });
  }

  static async start(host: string, port: number, target: { host: string; port: number }): Promise<TcpRelay> {
    const relay = new TcpRelay(host, port, target);
    await new Promise<void>((resolve, reject) => {
      relay.server.once('error', reject);
      relay.server.listen(port, host, resolve);
    });
    return relay;
  }

  /** Drops every connection and refuses new ones until heal(). */
  cut(): void {
    this.severed = true;
    for (const s of this.sockets) s.destroy();
  }

  heal(): void {
    this.severed = false;
  }

  async stop(): Promise<void> {
    this.cut();
    await new Promise((resolve) => this.server.close(resolve));
  }
}
