// The kubelet's view of a leader replica: /readyz (leads and the master serves) and /healthz (alive).

import { createServer, type Server } from 'node:http';
import { closeServer, listen } from '../kube/listen.ts';

export interface Verdict {
  ok: boolean;
  /** One line: why not, or what is fine. */
  reason: string;
}

export interface ProbeChecks {
  ready: () => Verdict;
  healthy: () => Verdict;
}

export interface ProbeServer {
  port: number;
  close: () => Promise<void>;
}

function answer(verdict: Verdict): [number, string] {
  return [verdict.ok ? 200 : 503, `${verdict.reason}\n`];
}

/** Listens on host:port; host is the Pod IP because replicas may share one host network. */
export async function startProbeServer(
  host: string,
  port: number,
  checks: ProbeChecks,
): Promise<ProbeServer> {
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    const [status, body] =
      path === '/readyz'
        ? answer(checks.ready())
        : path === '/healthz'
          ? answer(checks.healthy())
          : [404, 'not found: try /readyz or /healthz\n'];
    res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8' }).end(body);
  });
  return { port: await listen(server, port, host), close: () => closeServer(server) };
}
