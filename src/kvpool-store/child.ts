// The one child a kvpool-store process supervises (mooncake_master or the member service). Unlike the
// local cluster's processes, it inherits stdout/stderr (so `kubectl logs` shows the store's own lines)
// and stays in this process's group (so it dies with the container, or with a killed test process).
import { type ChildProcess, spawn } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { delimiter, join } from 'node:path';

export interface ChildExit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

const live = new Set<ChildProcess>();
// Whatever path this program leaves by, it leaves no store process behind.
process.on('exit', () => {
  for (const child of live) child.kill('SIGKILL');
});

export class Child {
  readonly name: string;
  readonly exited: Promise<ChildExit>;
  private readonly process: ChildProcess;
  private exit: ChildExit | undefined;

  /** `onLine`, when given, sees every output line (the output still reaches this process's own). */
  constructor(
    name: string,
    command: string,
    args: string[],
    env: NodeJS.ProcessEnv,
    onLine?: (line: string) => void,
  ) {
    this.name = name;
    this.process = spawn(command, args, {
      env,
      stdio: ['ignore', onLine ? 'pipe' : 'inherit', onLine ? 'pipe' : 'inherit'],
    });
    if (onLine) {
      for (const [from, to] of [
        [this.process.stdout, process.stdout],
        [this.process.stderr, process.stderr],
      ] as const) {
        let partial = '';
        from?.on('data', (chunk: Buffer) => {
          to.write(chunk);
          const lines = (partial + chunk.toString()).split('\n');
          partial = lines.pop() ?? '';
          for (const line of lines) onLine(line);
        });
      }
    }
    live.add(this.process);
    this.exited = new Promise<ChildExit>((resolve) => {
      const done = (exit: ChildExit) => {
        live.delete(this.process);
        this.exit ??= exit;
        resolve(this.exit);
      };
      this.process.once('exit', (code, signal) => done({ code, signal }));
      this.process.once('error', () => done({ code: 127, signal: null }));
    });
  }

  get pid(): number | undefined {
    return this.process.pid;
  }

  get running(): boolean {
    return this.exit === undefined;
  }

  signal(sig: NodeJS.Signals): void {
    if (this.running) this.process.kill(sig);
  }

  /** SIGTERM, then SIGKILL after `graceMs`; resolves once the child has exited. */
  async stop(graceMs: number): Promise<ChildExit> {
    this.signal('SIGTERM');
    const timer = setTimeout(() => this.signal('SIGKILL'), graceMs);
    try {
      return await this.exited;
    } finally {
      clearTimeout(timer);
    }
  }
}

/** The absolute path of `name` on PATH, so logs and process listings say which binary runs. */
export function findOnPath(name: string, path = process.env.PATH ?? ''): string {
  for (const dir of path.split(delimiter).filter(Boolean)) {
    const candidate = join(dir, name);
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // Not in this directory.
    }
  }
  throw new Error(`${name} is not on PATH (${path}); the store image installs it with the Mooncake wheel`);
}

export function describeExit(exit: ChildExit): string {
  return exit.signal ? `killed by ${exit.signal}` : `exit code ${exit.code}`;
}
