// Child processes of the local cluster and the test harnesses. Every process started here is tracked,
// gets its own process group (so its children die with it), logs to a file, and is killed when this
// process exits, whichever way it exits.
import { type ChildProcess, spawn } from 'node:child_process';
import { closeSync, mkdirSync, openSync } from 'node:fs';
import { join } from 'node:path';
import { WaitAborted } from '../src/kube/wait-for.ts';

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface StartOptions {
  args?: string[];
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  /** Directory for `<name>.log`; stdout and stderr both go there. */
  logDir: string;
  /** Extra spawn options (uid/gid for a process that runs as another user). */
  uid?: number;
  gid?: number;
}

const live = new Set<ManagedProcess>();

export class ManagedProcess {
  readonly child: ChildProcess;
  readonly exited: Promise<Exit>;
  readonly logFile: string;
  exit: Exit | undefined;

  readonly name: string;

  constructor(name: string, command: string, options: StartOptions) {
    this.name = name;
    mkdirSync(options.logDir, { recursive: true });
    this.logFile = join(options.logDir, `${name}.log`);
    const fd = openSync(this.logFile, 'a');
    this.child = spawn(command, options.args ?? [], {
      cwd: options.cwd,
      // A test run's marker follows every child, so the run can find what it left behind.
      env: {
        ...(options.env ?? process.env),
        ...(process.env.KVPOOL_RUN_ID ? { KVPOOL_RUN_ID: process.env.KVPOOL_RUN_ID } : {}),
      },
      stdio: ['ignore', fd, fd],
      detached: true,
      uid: options.uid,
      gid: options.gid,
    });
    closeSync(fd);
    live.add(this);
    this.exited = new Promise<Exit>((resolve) => {
      const done = (exit: Exit) => {
        live.delete(this);
        this.exit = exit;
        resolve(exit);
      };
      this.child.once('exit', (code, signal) => done({ code, signal }));
      this.child.once('error', () => done({ code: -1, signal: null }));
    });
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  get running(): boolean {
    return this.exit === undefined;
  }

  /** For a wait on this process: once it has exited, waiting longer cannot help. */
  assertRunning(): void {
    if (!this.running)
      throw new WaitAborted(`${this.name} exited (${JSON.stringify(this.exit)}); see ${this.logFile}`);
  }

  /** Sends a signal to the whole process group. */
  signal(sig: NodeJS.Signals): void {
    if (!this.running || this.child.pid === undefined) return;
    try {
      process.kill(-this.child.pid, sig);
    } catch {
      // Already gone.
    }
  }

  /** SIGTERM, then SIGKILL after `graceMs`; resolves once the process has exited. */
  async stop(graceMs = 5000): Promise<Exit> {
    if (!this.running) return this.exit!;
    this.signal('SIGTERM');
    const timer = setTimeout(() => this.signal('SIGKILL'), graceMs);
    const exit = await this.exited;
    clearTimeout(timer);
    // Children that ignored the group signal are killed with the group.
    if (this.child.pid !== undefined) {
      try {
        process.kill(-this.child.pid, 'SIGKILL');
      } catch {
        // The group is empty.
      }
    }
    return exit;
  }
}

export function startProcess(name: string, command: string, options: StartOptions): ManagedProcess {
  return new ManagedProcess(name, command, options);
}

/** Stops processes in reverse start order. */
export async function stopAll(processes: ManagedProcess[], graceMs = 5000): Promise<void> {
  for (const p of [...processes].reverse()) await p.stop(graceMs);
}

function killAllNow(): void {
  for (const p of live) p.signal('SIGKILL');
}

process.on('exit', killAllNow);
// A program that handles these signals itself (to stop gracefully) takes over; otherwise kill and exit.
for (const [sig, num] of [
  ['SIGINT', 2],
  ['SIGTERM', 15],
  ['SIGHUP', 1],
] as const) {
  process.on(sig, () => {
    if (process.listenerCount(sig) > 1) return;
    killAllNow();
    process.exit(128 + num);
  });
}
