// Starting and stopping the operator's and the store program's small HTTP(S) servers.
import type { Server as HttpServer } from 'node:http';
import type { Http2SecureServer } from 'node:http2';
import type { Server as HttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';

type Server = HttpServer | HttpsServer;

/** Listens on host:port (0 picks a free port) and resolves with the port bound, or rejects (EADDRINUSE…). */
export async function listen(
  server: Server | Http2SecureServer,
  port: number,
  host: string,
): Promise<number> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  return (server.address() as AddressInfo).port;
}

/** Stops accepting and drops kept-alive connections, so a stop never waits on an idle client. */
export async function closeServer(server: Server): Promise<void> {
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  server.closeAllConnections();
  await closed;
}
