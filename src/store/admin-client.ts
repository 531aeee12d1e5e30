// HTTP client for a Mooncake master's admin endpoint (:9003): health, metrics, segment listing and the
// tenant-quota ledger. Each read has its own timeout; redirects are never followed; bodies are capped.

import { request } from 'undici';
import { formatQuantity } from '../kube/readable-quantity.ts';

export const adminTimeoutMs = 5000;
const maxBodyBytes = 8 << 20;

/** The master could not be reached or did not answer in time. */
export class StoreUnreachable extends Error {
  constructor(address: string, cause: unknown) {
    super(
      `the store's admin endpoint ${address} did not answer: ${cause instanceof Error ? cause.message : String(cause)}`,
    );
    this.name = 'StoreUnreachable';
  }
}

/** The master answered with a failure (HTTP status and, when present, Mooncake's error code). */
export class StoreRequestFailed extends Error {
  readonly status: number;
  readonly errorCode: number | undefined;
  readonly errorMessage: string | undefined;

  constructor(what: string, status: number, errorCode?: number, errorMessage?: string) {
    super(
      `${what}: HTTP ${status}${errorCode !== undefined ? ` (${errorCode} ${errorMessage ?? ''})` : ''}`.trim(),
    );
    this.name = 'StoreRequestFailed';
    this.status = status;
    this.errorCode = errorCode;
    this.errorMessage = errorMessage;
  }
}

/** How a client's requests are made beyond their timeout. */
export interface AdminRequestOptions {
  /** The User-Agent every request sends, naming the replica that makes it. */
  userAgent?: string;
  /**
   * Every write (any method but GET) takes the signal this returns as it starts (the leadership term's):
   * refused before it is sent when aborted, cancelled in flight when it aborts. Reads never take it.
   */
  writeSignal?: () => AbortSignal;
}

export interface StoreResponse {
  status: number;
  body: string;
}

export class StoreAdminClient {
  readonly address: string;
  private readonly timeoutMs: number;
  private readonly options: AdminRequestOptions;

  constructor(address: string, timeoutMs = adminTimeoutMs, options: AdminRequestOptions = {}) {
    this.address = address;
    this.timeoutMs = timeoutMs;
    this.options = options;
  }

  async call(
    method: 'GET' | 'POST' | 'PUT' | 'DELETE',
    path: string,
    body?: unknown,
  ): Promise<StoreResponse> {
    const term = method === 'GET' ? undefined : this.options.writeSignal?.();
    term?.throwIfAborted();
    const timeout = AbortSignal.timeout(this.timeoutMs);
    try {
      const res = await request(`http://${this.address}${path}`, {
        method,
        body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
        headers: {
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
          ...(this.options.userAgent ? { 'user-agent': this.options.userAgent } : {}),
        },
        headersTimeout: this.timeoutMs,
        bodyTimeout: this.timeoutMs,
        signal: term ? AbortSignal.any([term, timeout]) : timeout,
      });
      const length = Number(res.headers['content-length'] ?? 0);
      if (length > maxBodyBytes) {
        res.body.destroy();
        throw new Error(
          `response of ${formatQuantity(length)} is over the ${formatQuantity(maxBodyBytes)} cap`,
        );
      }
      // A character split across chunks is carried over, not replaced.
      const decoder = new TextDecoder('utf-8');
      let text = '';
      for await (const chunk of res.body) {
        text += decoder.decode(chunk, { stream: true });
        if (text.length > maxBodyBytes) {
          res.body.destroy();
          throw new Error(`response is over the ${formatQuantity(maxBodyBytes)} cap`);
        }
      }
      text += decoder.decode();
      return { status: res.statusCode, body: text };
    } catch (err) {
      if (term?.aborted) throw term.reason;
      throw new StoreUnreachable(this.address, err);
    }
  }

  async getText(path: string): Promise<string> {
    const res = await this.call('GET', path);
    if (res.status !== 200) throw failure(`GET ${path}`, res);
    return res.body;
  }

  async getJson<T>(path: string): Promise<T> {
    return JSON.parse(await this.getText(path)) as T;
  }
}

/** Builds the error for a failed answer, reading Mooncake's `{success, error_code, error_message}`. */
export function failure(what: string, res: StoreResponse): StoreRequestFailed {
  try {
    const parsed = JSON.parse(res.body) as { error_code?: number; error_message?: string };
    return new StoreRequestFailed(what, res.status, parsed.error_code, parsed.error_message);
  } catch {
    return new StoreRequestFailed(what, res.status);
  }
}
