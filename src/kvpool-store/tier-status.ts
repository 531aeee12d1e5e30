// What a member knows of its disk tier that its master does not report (decision 39): the store's
// FILE_WRITE_FAIL lines, which its master never hears of, and the tier filesystem's own size and free
// space (statfs), which the master's file capacity (the declared ceiling) does not reflect. Served as
// JSON on GET /tier, on the Pod IP, for the operator alone (the store's NetworkPolicy).
import { statfsSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { closeServer, listen } from '../kube/listen.ts';
import type { TierReport } from '../store/member-tier.ts';

/** The store's error code for an offload write that did not land (a full filesystem among causes). */
export const writeFailureCode = 'FILE_WRITE_FAIL';

/** The store's own words without glog's prefix (`E1202 14:12:35.687638  7249 file_storage.cpp:509] `). */
export function storeWords(line: string): string {
  return line.replace(/^[IWEF]\d{4} [\d:.]+\s+\d+ [^\]]+\] /, '').trim();
}

/** Counts the member's FILE_WRITE_FAIL lines and reads the tier's filesystem on demand. */
export class TierStatus {
  private readonly path: string;
  private readonly now: () => Date;
  private failures = 0;
  private last?: { at: string; line: string };

  constructor(path: string, now: () => Date = () => new Date()) {
    this.path = path;
    this.now = now;
  }

  /** Sees one line of the member's output. */
  see(line: string): void {
    if (!line.includes(writeFailureCode)) return;
    this.failures += 1;
    this.last = { at: this.now().toISOString(), line: storeWords(line).slice(0, 512) };
  }

  report(): TierReport {
    return {
      path: this.path,
      ...filesystemOf(this.path),
      writeFailures: this.failures,
      ...(this.last ? { lastWriteFailure: this.last } : {}),
    };
  }
}

/** The filesystem's size and what an unprivileged writer may still use; the error when it cannot be read. */
function filesystemOf(path: string): Pick<TierReport, 'filesystem' | 'filesystemError'> {
  try {
    const s = statfsSync(path, { bigint: true });
    return {
      filesystem: {
        totalBytes: Number(s.blocks * s.bsize),
        availableBytes: Number(s.bavail * s.bsize),
      },
    };
  } catch (err) {
    return { filesystemError: (err as Error).message };
  }
}

export interface TierStatusServer {
  port: number;
  close: () => Promise<void>;
}

/** Serves GET /tier on host:port (the Pod IP: members of several groups may share a host network). */
export async function startTierStatusServer(
  host: string,
  port: number,
  status: TierStatus,
): Promise<TierStatusServer> {
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method !== 'GET' || path !== '/tier') {
      res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' }).end('not found: try GET /tier\n');
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(status.report()));
  });
  return { port: await listen(server, port, host), close: () => closeServer(server) };
}
