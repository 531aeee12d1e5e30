// HTTPS server for admission webhooks (AdmissionReview v1). Each path has a handler that returns a
// verdict; mutating handlers return a JSON Patch. The serving certificate can be swapped in place.

import { createServer, type Server } from 'node:https';
import { closeServer, listen } from './listen.ts';
import { log } from './log.ts';
import { webhookInFlight, webhookLatency, webhookRequests } from './metrics.ts';
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
      const webhook = (req.url ?? '').split('?')[0]!;
      const handler = this.handlers.get(webhook);
      if (req.method !== 'POST' || !handler) {
        res.writeHead(404).end();
        return;
      }
      // controller-runtime's webhook metrics, labelled by the webhook's path.
      const started = performance.now();
      webhookInFlight.inc({ webhook });
      const answered = (code: number) => {
        webhookInFlight.dec({ webhook });
        webhookRequests.inc({ webhook, code: String(code) });
        webhookLatency.observe({ webhook, code: String(code) }, (performance.now() - started) / 1000);
      };
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', async () => {
        try {
          const out = await review(JSON.parse(Buffer.concat(chunks).toString()), handler);
          res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(out));
          answered(200);
        } catch (err) {
          res.writeHead(400, { 'content-type': 'text/plain' }).end(String(err));
          answered(400);
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
