// The master's way to etcd over TLS: mooncake_master's etcd client speaks plain gRPC only, so each etcd
// endpoint gets a listener on 127.0.0.1 that carries every connection on, inside TLS with the leader's
// client certificate, to that endpoint (decision 50). Nothing outside the Pod can reach the plain end.
import { readFileSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import { connect } from 'node:tls';
import type { Logger } from '../kube/log.ts';

export interface TunnelSpec {
  /** A loopback address (127.0.0.1 unless given): the plain end is never reachable from outside. */
  localHost: string;
  localPort: number;
  /** https://host:port of one etcd member. */
  endpoint: string;
}

/** `[<loopback address>:]<local port>=https://host:port`, as `--etcd-tunnel` takes it. */
export function parseTunnel(text: string): TunnelSpec | undefined {
  const m = /^(?:(127\.[0-9]{1,3}\.[0-9]{1,3}\.[0-9]{1,3}):)?([0-9]{1,5})=(https:\/\/.+)$/.exec(text);
  if (!m) return undefined;
  const localHost = m[1] ?? '127.0.0.1';
  const localPort = Number(m[2]);
  let url: URL;
  try {
    url = new URL(m[3]!);
  } catch {
    return undefined;
  }
  if (localPort < 1 || localPort > 65535 || !url.port || url.pathname !== '/') return undefined;
  return { localHost, localPort, endpoint: m[3]! };
}

export interface ClientTls {
  ca: Buffer;
  cert: Buffer;
  key: Buffer;
}

/** ca.crt, tls.crt and tls.key of a mounted Secret. */
export function readClientTls(dir: string): ClientTls {
  const file = (name: string) => readFileSync(join(dir, name));
  return { ca: file('ca.crt'), cert: file('tls.crt'), key: file('tls.key') };
}

function carry(local: Socket, spec: TunnelSpec, tls: ClientTls, logger: Logger): void {
  const url = new URL(spec.endpoint);
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  // etcd serves gRPC over TLS only to clients that offer HTTP/2.
  const remote = connect({ host, port: Number(url.port), servername: host, ...tls, ALPNProtocols: ['h2'] });
  remote.once('secureConnect', () => {
    local.pipe(remote);
    remote.pipe(local);
  });
  remote.on('error', (err) => {
    logger.debug({ endpoint: spec.endpoint, err: err.message }, 'etcd connection failed');
    local.destroy();
  });
  local.on('error', () => remote.destroy());
  local.on('close', () => remote.destroy());
  remote.on('close', () => local.destroy());
}

function listenOn(server: Server, host: string, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
}

export interface Tunnels {
  close(): Promise<void>;
}

/** Opens every tunnel; throws (closing those opened) when a local port cannot be had. */
export async function openTunnels(specs: TunnelSpec[], tls: ClientTls, logger: Logger): Promise<Tunnels> {
  const servers: Server[] = [];
  const sockets = new Set<Socket>();
  const closeAll = async () => {
    for (const s of sockets) s.destroy();
    await Promise.all(servers.map((s) => new Promise((resolve) => s.close(resolve))));
  };
  try {
    for (const spec of specs) {
      const server = createServer((local) => {
        sockets.add(local);
        local.on('close', () => sockets.delete(local));
        carry(local, spec, tls, logger);
      });
      servers.push(server);
      await listenOn(server, spec.localHost, spec.localPort);
      logger.info(
        { local: `${spec.localHost}:${spec.localPort}`, endpoint: spec.endpoint },
        'etcd tunnel open',
      );
    }
  } catch (err) {
    await closeAll();
    throw err;
  }
  return { close: closeAll };
}
