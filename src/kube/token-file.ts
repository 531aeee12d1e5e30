// A bearer token read from a file that is replaced while the process runs: the projected ServiceAccount
// token the kubelet rotates, or a kubeconfig's `token-file`. The file is read again once the last read
// is older than maxAgeMs (a minute, as client-go does) and at once after the API server refused the
// token, so a rotated token is picked up before the old one expires and a revoked one costs one retry.
import { readFile } from 'node:fs/promises';
import { type Clock, realClock } from './clock.ts';

export class TokenFile {
  readonly path: string;
  private readonly maxAgeMs: number;
  private readonly clock: Pick<Clock, 'now'>;
  private token: Promise<string> | undefined;
  private readAt = 0;

  constructor(path: string, maxAgeMs = 60_000, clock: Pick<Clock, 'now'> = realClock) {
    this.path = path;
    this.maxAgeMs = maxAgeMs;
    this.clock = clock;
  }

  /** The current token, read from the file when the cached one is stale. */
  async current(): Promise<string> {
    if (!this.token || this.clock.now() - this.readAt > this.maxAgeMs) {
      this.readAt = this.clock.now();
      const read = readFile(this.path, 'utf8').then((t) => {
        const token = t.trim();
        if (!token) throw new Error(`the token file ${this.path} is empty`);
        return token;
      });
      this.token = read;
      // A failed read is not cached: the next request tries the file again.
      read.catch(() => {
        if (this.token === read) this.token = undefined;
      });
    }
    return this.token;
  }

  /** Forgets the cached token (the API server refused it); the next request reads the file. */
  invalidate(): void {
    this.token = undefined;
  }
}
