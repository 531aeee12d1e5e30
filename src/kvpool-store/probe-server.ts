// The kubelet's view of a leader replica: /readyz (leads and the master serves) and /healthz (alive);
// with an etcd election, also the operator's request to hand leadership over (POST /step-down).

import { createServer, type Server } from 'node:http';
import { closeServer, listen } from '../kube/listen.ts';
import { stepDownSeconds } from './step-down.ts';

export interface Verdict {
  ok: boolean;
  /** One line: why not, or what is fine. */
  reason: string;
}

export interface ProbeChecks {
  ready: () => Verdict;
  healthy: () => Verdict;
  /** POST /step-down?seconds=N: hand leadership over for N seconds (etcd elections; the operator's rollouts and drains). */
  stepDown?: (seconds: number) => Verdict;
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
    const url = new URL(req.url ?? '/', 'http://probe');
    const path = url.pathname;
    const stepDown = req.method === 'POST' && path === '/step-down' ? checks.stepDown : undefined;
    const seconds = Number(url.searchParams.get('seconds') ?? stepDownSeconds);
    const [status, body] = stepDown
      ? Number.isInteger(seconds) && seconds > 0 && seconds <= 3600
        ? answer(stepDown(seconds))
        : [400, 'seconds must be a whole number from 1 to 3600\n']
      : path === '/readyz'
        ? answer(checks.ready())
        : path === '/healthz'
          ? answer(checks.healthy())
          : [404, 'not found: try /readyz or /healthz\n'];
    res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8' }).end(body);
  });
  return { port: await listen(server, port, host), close: () => closeServer(server) };
}
