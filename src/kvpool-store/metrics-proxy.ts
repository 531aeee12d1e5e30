// The master's /metrics on a port of its own, read-only: the admin port also serves writes (tenant
// quotas, remove_all), so only the operator may reach it, while a scraper may reach this one.

import { createServer, type Server } from 'node:http';
import { closeServer, listen } from '../kube/listen.ts';
import { StoreAdminClient } from '../store/admin-client.ts';

const requestTimeoutMs = 5000;

export interface MetricsProxy {
  port: number;
  close: () => Promise<void>;
}

function reply(res: import('node:http').ServerResponse, status: number, body: string, headers = {}) {
  res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8', ...headers }).end(body);
}

/**
 * Listens on host:port and answers GET (or HEAD) /metrics with the master's own, read from `admin`
 * (`host:port` of its admin endpoint) as it answers: a standby's master is not running, so 503.
 * Every other path is 404, every other method 405: nothing reaches the admin API through here.
 */
export async function startMetricsProxy(host: string, port: number, admin: string): Promise<MetricsProxy> {
  const master = new StoreAdminClient(admin, requestTimeoutMs);
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (path !== '/metrics') return reply(res, 404, 'not found: only /metrics is served here\n');
    if (req.method !== 'GET' && req.method !== 'HEAD')
      return reply(res, 405, 'method not allowed: /metrics is read-only\n', { allow: 'GET, HEAD' });
    master.call('GET', '/metrics').then(
      ({ status, body }) =>
        reply(res, status, req.method === 'HEAD' ? '' : body, {
          'content-type': 'text/plain; version=0.0.4; charset=utf-8',
        }),
      (err: Error) => reply(res, 503, `the master on this replica did not answer: ${err.message}\n`),
    );
  });
  return { port: await listen(server, port, host), close: () => closeServer(server) };
}
