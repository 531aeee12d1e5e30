// HTTPS server for admission webhooks (AdmissionReview v1). Each path has a handler that returns a
// verdict; mutating handlers return a JSON Patch. The serving certificate can be swapped in place.

import { createServer, type Server } from 'node:https';
import { Histogram } from 'prom-client';
import { closeServer, listen } from './listen.ts';
import { log } from './log.ts';
import { registry } from './metrics.ts';
import type { KubeObject } from './object.ts';

export interface AdmissionRequest<T = KubeObject> {
  uid: string;
  kind: { group: string; version: string; kind: string };
  resource: { group: string; version: string; resource: string };
  subResource?: string;
  name?: string;
  namespace?: string;
  operation: 'CREATE' | 'UPDATE' | 'DELETE' | 'CONNECT';
  userInfo?: { username?: string; groups?: string[] };
  object?: T;
  oldObject?: T;
  dryRun?: boolean;
}

export interface JsonPatchOp {
  op: 'add' | 'remove' | 'replace' | 'test' | 'move' | 'copy';
  path: string;
  value?: unknown;
}

export interface AdmissionVerdict {
  allowed: boolean;
  /** Why a request was refused: names the field, the rule and the fix. */
  message?: string;
  reason?: string;
  code?: number;
  warnings?: string[];
  patch?: JsonPatchOp[];
}

export type AdmissionHandler = (request: AdmissionRequest) => Promise<AdmissionVerdict> | AdmissionVerdict;

/** Time from a request's last byte to its answer, by hook path: what admission costs on this side. */
export const admissionDuration = new Histogram({
  name: 'kvpool_webhook_admission_duration_seconds',
  help: 'Admission review handling time in the webhook server, by path and verdict.',
  labelNames: ['path', 'allowed'] as const,
  buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10],
  registers: [registry],
});

export interface ServingCertificate {
  certPem: string;
  keyPem: string;
}

export function allow(warnings?: string[], patch?: JsonPatchOp[]): AdmissionVerdict {
  return { allowed: true, ...(warnings?.length ? { warnings } : {}), ...(patch?.length ? { patch } : {}) };
}

export function deny(message: string, code = 422): AdmissionVerdict {
  return { allowed: false, message, code, reason: 'Invalid' };
}

/** Turns a request body into the AdmissionReview response (pure, for fixture tests). */
export async function review(body: unknown, handler: AdmissionHandler): Promise<Record<string, unknown>> {
  const request = (body as { request?: AdmissionRequest }).request;
  if (!request?.uid) throw new Error('not an AdmissionReview v1 request');
  let verdict: AdmissionVerdict;
  try {
    verdict = await handler(request);
  } catch (err) {
    log.error({ err: String(err), uid: request.uid }, 'admission handler failed');
    verdict = { allowed: false, code: 500, message: `internal error in the kvpool webhook: ${String(err)}` };
  }
  const response: Record<string, unknown> = { uid: request.uid, allowed: verdict.allowed };
  if (!verdict.allowed) {
    response.status = {
      code: verdict.code ?? 422,
      message: verdict.message ?? 'refused',
      reason: verdict.reason,
    };
  }
  if (verdict.warnings?.length) response.warnings = verdict.warnings;
  if (verdict.patch?.length) {
    response.patchType = 'JSONPatch';
    response.patch = Buffer.from(JSON.stringify(verdict.patch)).toString('base64');
  }
  return { apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', response };
}

export class WebhookServer {
  private readonly handlers = new Map<string, AdmissionHandler>();
  private server: Server | undefined;

  handle(path: string, handler: AdmissionHandler): this {
    this.handlers.set(path, handler);
    return this;
  }

  async start(cert: ServingCertificate, port: number, host = '0.0.0.0'): Promise<number> {
    this.server = createServer({ cert: cert.certPem, key: cert.keyPem }, (req, res) => {
      const path = (req.url ?? '').split('?')[0]!;
      const handler = this.handlers.get(path);
      if (req.method !== 'POST' || !handler) {
        res.writeHead(404).end();
        return;
      }
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', async () => {
        const started = performance.now();
        try {
          const out = await review(JSON.parse(Buffer.concat(chunks).toString()), handler);
          res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(out));
          const allowed = String((out.response as { allowed: boolean }).allowed);
          admissionDuration.observe({ path, allowed }, (performance.now() - started) / 1000);
        } catch (err) {
          res.writeHead(400, { 'content-type': 'text/plain' }).end(String(err));
        }
      });
    });
    const server = this.server;
    // The apiserver keeps idle connections for 90 s; closing ours first races its next request (a reset).
    server.keepAliveTimeout = 120_000;
    server.headersTimeout = 125_000;
    return listen(server, port, host);
  }

  /** Serves a new certificate from the next TLS handshake on, without a restart. */
  updateCertificate(cert: ServingCertificate): void {
    this.server?.setSecureContext({ cert: cert.certPem, key: cert.keyPem });
  }

  async stop(): Promise<void> {
    const server = this.server;
    if (!server) return;
    await closeServer(server);
  }
}
