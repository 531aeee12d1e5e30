// Free TCP ports for processes that must be told their port up front. They come from below the
// kernel's ephemeral range (32768–60999 by default): a port from that range can be taken by any
// outgoing connection between the check here and the process's own listen, which made a process
// fail to start with EADDRINUSE now and then.
import { createServer } from 'node:net';

const lowest = 20_000;
const highest = 29_999;
/** Ports this process handed out, never handed out twice (their owner may not listen yet). */
const handedOut = new Set<number>();

function canListen(port: number, host: string): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen({ port, host, exclusive: true }, () => server.close(() => resolve(true)));
  });
}

/** A port free on `host` and on every address (the wildcard), so a later listen on either succeeds. */
export async function freePort(host = '127.0.0.1'): Promise<number> {
  for (let attempt = 0; attempt < 500; attempt++) {
    const port = lowest + Math.floor(Math.random() * (highest - lowest + 1));
    if (handedOut.has(port)) continue;
    handedOut.add(port); // reserved before the check, so concurrent calls never pick the same one
    if ((await canListen(port, '0.0.0.0')) && (await canListen(port, host))) return port;
    handedOut.delete(port);
  }
  throw new Error(`no free TCP port between ${lowest} and ${highest} after 500 tries`);
}
