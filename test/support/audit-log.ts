// The writes an API server's audit log recorded (a control plane started with `auditWrites`): who made
// each, when the API server received it, and what it named. Times are the API server's wall clock in
// microseconds, comparable with `wallClockMs()` taken on the same machine.
import { existsSync, readFileSync } from 'node:fs';

export interface AuditedWrite {
  /** When the API server received the request, in ms since the epoch (microsecond precision). */
  at: number;
  verb: string;
  resource: string;
  namespace?: string;
  name?: string;
  subresource?: string;
  username: string;
  userAgent: string;
}

interface AuditEvent {
  stage: string;
  verb: string;
  requestReceivedTimestamp: string;
  user: { username: string };
  userAgent?: string;
  objectRef?: { resource?: string; namespace?: string; name?: string; subresource?: string };
}

/** An RFC 3339 time with up to nanoseconds, in ms since the epoch, keeping the microseconds. */
export function parseMicroTime(text: string): number {
  const m = /^(.*T\d\d:\d\d:\d\d)(?:\.(\d+))?Z$/.exec(text);
  if (!m) throw new Error(`not an RFC 3339 UTC time: ${text}`);
  return Date.parse(`${m[1]}Z`) + Number(`0.${m[2] ?? '0'}`) * 1000;
}

/** Now, in ms since the epoch with sub-millisecond precision. */
export function wallClockMs(): number {
  return performance.timeOrigin + performance.now();
}

/** Every write recorded so far, as received, in the order received. */
export function auditedWrites(path: string): AuditedWrite[] {
  if (!existsSync(path)) return [];
  return readFileSync(path, 'utf8')
    .split('\n')
    .filter((line) => line.trim())
    .map((line) => JSON.parse(line) as AuditEvent)
    .filter((e) => e.stage === 'RequestReceived')
    .map((e) => ({
      at: parseMicroTime(e.requestReceivedTimestamp),
      verb: e.verb,
      resource: e.objectRef?.resource ?? '',
      namespace: e.objectRef?.namespace,
      name: e.objectRef?.name,
      subresource: e.objectRef?.subresource,
      username: e.user.username,
      userAgent: e.userAgent ?? '',
    }))
    .sort((a, b) => a.at - b.at);
}

/** One line naming a write, for a failure message. */
export function describeWrite(w: AuditedWrite): string {
  const what = [w.namespace, w.name].filter(Boolean).join('/');
  return `${w.verb} ${w.resource}${w.subresource ? `/${w.subresource}` : ''} ${what} by ${w.userAgent || w.username}`;
}
