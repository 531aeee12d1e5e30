// Probes and lifecycle hooks run for real: an HTTP GET against the Pod's IP, a TCP connect, or a
// command inside the container (see launch.ts). A ProbeWorker turns results into the probe's verdict
// with the kubelet's thresholds and timing.
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { connect } from 'node:net';
import type { Container, Handler, Probe } from './pod-types.ts';

export interface ProbeResult {
  ok: boolean;
  message: string;
}

export interface ProbeTarget {
  podIP: string;
  container: Container;
  /** Runs a command inside the container; resolves with its exit code and output. */
  exec(
    argv: string[],
    timeoutMs: number,
  ): Promise<{ code: number | null; output: string; timedOut: boolean }>;
}

function resolvePort(port: number | string, container: Container): number {
  if (typeof port === 'number') return port;
  const named = container.ports?.find((p) => p.name === port)?.containerPort;
  if (named !== undefined) return named;
  const n = Number(port);
  if (Number.isInteger(n)) return n;
  throw new Error(`port ${port} names no port of container ${container.name}`);
}

function httpGet(
  handler: NonNullable<Handler['httpGet']>,
  target: ProbeTarget,
  timeoutMs: number,
): Promise<ProbeResult> {
  const host = handler.host || target.podIP;
  const port = resolvePort(handler.port, target.container);
  const scheme = handler.scheme === 'HTTPS' ? 'https' : 'http';
  const path = handler.path ?? '/';
  const url = `${scheme}://${host}:${port}${path.startsWith('/') ? '' : '/'}${path}`;
  const headers: Record<string, string> = { 'user-agent': 'kube-probe/1.34', accept: '*/*' };
  for (const h of handler.httpHeaders ?? []) headers[h.name] = h.value;
  return new Promise((resolve) => {
    const send = scheme === 'https' ? httpsRequest : httpRequest;
    const req = send(
      url,
      { method: 'GET', headers, timeout: timeoutMs, rejectUnauthorized: false },
      (res) => {
        res.resume();
        const code = res.statusCode ?? 0;
        resolve(
          code >= 200 && code < 400
            ? { ok: true, message: '' }
            : { ok: false, message: `HTTP probe failed with statuscode: ${code}` },
        );
      },
    );
    req.on('timeout', () => req.destroy(new Error('context deadline exceeded (Client.Timeout exceeded)')));
    req.on('error', (err) => resolve({ ok: false, message: `Get "${url}": ${err.message}` }));
    req.end();
  });
}

function tcpSocket(
  handler: NonNullable<Handler['tcpSocket']>,
  target: ProbeTarget,
  timeoutMs: number,
): Promise<ProbeResult> {
  const host = handler.host || target.podIP;
  const port = resolvePort(handler.port, target.container);
  return new Promise((resolve) => {
    const socket = connect({ host, port, timeout: timeoutMs });
    socket.once('connect', () => {
      socket.destroy();
      resolve({ ok: true, message: '' });
    });
    socket.once('timeout', () => socket.destroy(new Error('i/o timeout')));
    socket.once('error', (err) =>
      resolve({ ok: false, message: `dial tcp ${host}:${port}: ${err.message}` }),
    );
  });
}

/** Runs a probe or hook handler once. */
export async function runHandler(
  handler: Handler,
  target: ProbeTarget,
  timeoutMs: number,
): Promise<ProbeResult> {
  try {
    if (handler.httpGet) return await httpGet(handler.httpGet, target, timeoutMs);
    if (handler.tcpSocket) return await tcpSocket(handler.tcpSocket, target, timeoutMs);
    if (handler.exec) {
      const r = await target.exec(handler.exec.command ?? [], timeoutMs);
      if (r.timedOut) return { ok: false, message: `command timed out after ${timeoutMs / 1000}s` };
      const output = r.output.trim();
      return r.code === 0
        ? { ok: true, message: output }
        : { ok: false, message: output || `command exited with code ${r.code}` };
    }
    if (handler.sleep) {
      await new Promise((r) => setTimeout(r, Math.min(handler.sleep!.seconds * 1000, timeoutMs)));
      return { ok: true, message: '' };
    }
    if (handler.grpc) return { ok: false, message: 'gRPC probes are not supported on the local cluster' };
    return { ok: false, message: 'the handler names no action' };
  } catch (err) {
    return { ok: false, message: (err as Error).message };
  }
}

export type ProbeKind = 'Liveness' | 'Readiness' | 'Startup';

/**
 * Runs one probe of a running container every periodSeconds (after initialDelaySeconds) and reports
 * each change of its verdict: success after successThreshold successes, failure after failureThreshold
 * failures.
 */
export class ProbeWorker {
  readonly kind: ProbeKind;
  private readonly probe: Probe;
  private readonly target: ProbeTarget;
  private readonly onChange: (ok: boolean, message: string) => void;
  private readonly onFailure: (message: string) => void;
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  private successes = 0;
  private failures = 0;
  private verdict: boolean | undefined;

  constructor(
    kind: ProbeKind,
    probe: Probe,
    target: ProbeTarget,
    handlers: { onChange: (ok: boolean, message: string) => void; onFailure: (message: string) => void },
  ) {
    this.kind = kind;
    this.probe = probe;
    this.target = target;
    this.onChange = handlers.onChange;
    this.onFailure = handlers.onFailure;
  }

  start(): void {
    this.schedule((this.probe.initialDelaySeconds ?? 0) * 1000);
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
  }

  private schedule(ms: number): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => void this.tick(), ms);
  }

  private async tick(): Promise<void> {
    const timeoutMs = (this.probe.timeoutSeconds ?? 1) * 1000;
    const result = await runHandler(this.probe, this.target, timeoutMs);
    if (this.stopped) return;
    if (result.ok) {
      this.successes += 1;
      this.failures = 0;
      // Liveness and startup probes need one success whatever successThreshold says.
      const needed = this.kind === 'Readiness' ? (this.probe.successThreshold ?? 1) : 1;
      if (this.successes >= needed && this.verdict !== true) {
        this.verdict = true;
        this.onChange(true, result.message);
      }
    } else {
      this.failures += 1;
      this.successes = 0;
      this.onFailure(result.message);
      if (this.failures >= (this.probe.failureThreshold ?? 3) && this.verdict !== false) {
        this.verdict = false;
        this.onChange(false, result.message);
      }
    }
    this.schedule((this.probe.periodSeconds ?? 10) * 1000);
  }
}
