// HTTPS server for admission webhooks (AdmissionReview v1). Each path has a handler that returns a
// verdict; mutating handlers return a JSON Patch. The serving certificate can be swapped in place.
// It speaks HTTP/2 (HTTP/1.1 too): the apiserver then sends concurrent reviews over one connection
// instead of opening, and handshaking, one connection per review in flight.

import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  createSecureServer,
  type Http2SecureServer,
  type Http2ServerRequest,
  type Http2ServerResponse,
} from 'node:http2';
import type { TLSSocket } from 'node:tls';
import type { UserInfo } from 'kubernetes-types/authentication/v1.js';
import { listen } from './listen.ts';
import { log } from './log.ts';
import { webhookInFlight, webhookLatency, webhookRequests } from './metrics.ts';
import type { KubeObject } from './object.ts';
import { formatQuantity } from './readable-quantity.ts';

/** admission.k8s.io/v1 AdmissionRequest (kubernetes-types serves no admission group). */
export interface AdmissionRequest<T = KubeObject> {
  uid: string;
  kind: { group: string; version: string; kind: string };
  resource: { group: string; version: string; resource: string };
  subResource?: string;
  name?: string;
  namespace?: string;
  operation: 'CREATE' | 'UPDATE' | 'DELETE' | 'CONNECT';
  userInfo?: UserInfo;
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

/** Judges the requests of one path, whose objects are of kind `T` (the webhook configuration routes them). */
export type AdmissionHandler<T extends KubeObject = KubeObject> = (
  request: AdmissionRequest<T>,
) => Promise<AdmissionVerdict> | AdmissionVerdict;

/** A path's handler, taking the decoded review body. */
type Judge = (body: unknown) => Promise<Record<string, unknown>>;

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

/** A review the server cannot judge: answered with a plain-text status, never handed to a handler. */
export class UnreadableReview extends Error {
  readonly status: number;
  constructor(status: number, message: string) {
    super(message);
    this.name = 'UnreadableReview';
    this.status = status;
  }
}

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** The request of a review body; its objects are of the kind the path's webhook is registered for. */
function decodeRequest<T extends KubeObject>(body: unknown): AdmissionRequest<T> | undefined {
  if (!isObject(body) || !isObject(body.request)) return undefined;
  const request: object = body.request;
  return request as AdmissionRequest<T>;
}

/** What in a decoded request keeps a handler from judging it, if anything. */
function missingPart(request: AdmissionRequest<KubeObject>): string | undefined {
  if (typeof request.operation !== 'string') return 'request.operation';
  const needsObject = request.operation === 'CREATE' || request.operation === 'UPDATE';
  if (needsObject && !isObject(request.object)) return 'request.object';
  if (request.object !== undefined && !isObject(request.object?.metadata)) return 'request.object.metadata';
  if (request.operation === 'UPDATE' && !isObject(request.oldObject)) return 'request.oldObject';
  return undefined;
}

/** Turns a request body into the AdmissionReview response (pure, for fixture tests). */
export async function review<T extends KubeObject>(
  body: unknown,
  handler: AdmissionHandler<T>,
): Promise<Record<string, unknown>> {
  const request = decodeRequest<T>(body);
  if (typeof request?.uid !== 'string' || !request.uid)
    throw new UnreadableReview(400, 'not an AdmissionReview v1 request: request.uid is missing');
  let verdict: AdmissionVerdict;
  try {
    const missing = missingPart(request);
    verdict = missing
      ? deny(`the AdmissionReview carries no ${missing} to judge; nothing was admitted`, 400)
      : await handler(request);
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

/** The largest review read: an UPDATE carries two objects of at most the apiserver's 3 MiB request limit. */
export const defaultMaxReviewBytes = 8 << 20;

export class WebhookServer {
  private readonly handlers = new Map<string, Judge>();
  private readonly maxReviewBytes: number;
  private server: Http2SecureServer | undefined;
  private readonly sockets = new Set<TLSSocket>();

  constructor(options: { maxReviewBytes?: number } = {}) {
    this.maxReviewBytes = options.maxReviewBytes ?? defaultMaxReviewBytes;
  }

  handle<T extends KubeObject>(path: string, handler: AdmissionHandler<T>): this {
    this.handlers.set(path, (body) => review(body, handler));
    return this;
  }

  async start(cert: ServingCertificate, port: number, host = '0.0.0.0'): Promise<number> {
    const server = createSecureServer(
      { cert: cert.certPem, key: cert.keyPem, allowHTTP1: true },
      (req: Request, response: ServerResponse | Http2ServerResponse) => {
        const res = response as Response;
        const webhook = (req.url ?? '').split('?')[0]!;
        const judge = this.handlers.get(webhook);
        if (req.method !== 'POST' || !judge) {
          res.writeHead(404).end();
          return;
        }
        // controller-runtime's webhook metrics, labelled by the webhook's path, counted once answered.
        const started = performance.now();
        webhookInFlight.inc({ webhook });
        res.once('close', () => {
          const code = String(res.statusCode);
          webhookInFlight.dec({ webhook });
          webhookRequests.inc({ webhook, code });
          webhookLatency.observe({ webhook, code }, (performance.now() - started) / 1000);
        });
        readReview(req, res, this.maxReviewBytes, judge);
      },
    );
    this.server = server;
    // The apiserver keeps idle connections for 90 s; closing ours first races its next request (a
    // reset). Sockets are kept so that a stop never waits on an idle client.
    server.setTimeout(0);
    server.on('secureConnection', (socket: TLSSocket) => {
      this.sockets.add(socket);
      socket.once('close', () => this.sockets.delete(socket));
    });
    return listen(server, port, host);
  }

  /** Serves a new certificate from the next TLS handshake on, without a restart. */
  updateCertificate(cert: ServingCertificate): void {
    this.server?.setSecureContext({ cert: cert.certPem, key: cert.keyPem });
  }

  async stop(): Promise<void> {
    const server = this.server;
    if (!server) return;
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    for (const socket of this.sockets) socket.destroy();
    await closed;
  }
}

type Request = IncomingMessage | Http2ServerRequest;
/** What an answer needs of an HTTP/1.1 or an HTTP/2 response. */
interface Response {
  statusCode: number;
  headersSent: boolean;
  writeHead(status: number, headers?: Record<string, string>): { end(body?: string): unknown };
  once(event: 'close', listener: () => void): unknown;
}

function answerPlain(res: Response, status: number, message: string): void {
  if (res.headersSent) return;
  // HTTP/2 has no Connection header: the stream ends, the connection serves the others.
  const close: Record<string, string> = 'stream' in res ? {} : { connection: 'close' };
  res.writeHead(status, { 'content-type': 'text/plain', ...close }).end(message);
}

/** Reads at most `limit` bytes of a review, judges it, and answers; a client that goes away is dropped. */
function readReview(req: Request, res: Response, limit: number, judge: Judge) {
  const tooLarge = `the AdmissionReview is larger than the webhook reads (${formatQuantity(limit)}); nothing was admitted`;
  req.on('error', () => req.destroy());
  if (Number(req.headers['content-length'] ?? 0) > limit) {
    answerPlain(res, 413, tooLarge);
    req.resume();
    return;
  }
  const chunks: Buffer[] = [];
  let size = 0;
  req.on('data', (c: Buffer) => {
    size += c.length;
    if (size > limit) {
      // Stop keeping the body; what is still on its way is read and dropped.
      chunks.length = 0;
      answerPlain(res, 413, tooLarge);
      return;
    }
    chunks.push(c);
  });
  req.on('end', async () => {
    if (size > limit) return;
    let body: unknown;
    try {
      body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    } catch (err) {
      answerPlain(res, 400, `the request body is not JSON: ${err instanceof Error ? err.message : err}`);
      return;
    }
    try {
      const out = await judge(body);
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(out));
    } catch (err) {
      answerPlain(
        res,
        err instanceof UnreadableReview ? err.status : 500,
        String(err instanceof Error ? err.message : err),
      );
    }
  });
}
