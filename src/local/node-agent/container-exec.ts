// Running a command inside a running container (exec probes and hooks): its namespaces and root, its
// user, its environment, with a timeout that kills whatever the command started.
import { spawn } from 'node:child_process';
import { execInContainerArgv, type LaunchSpec, type SystemTools } from './launch.ts';

export interface ExecResult {
  code: number | null;
  output: string;
  timedOut: boolean;
}

const outputLimit = 64 * 1024;

export function execInContainer(
  pid: number,
  launch: { env: Record<string, string>; spec: LaunchSpec },
  argv: string[],
  timeoutMs: number,
  tools: SystemTools,
): Promise<ExecResult> {
  const [cmd, ...args] = execInContainerArgv(pid, launch.spec, argv, tools);
  return new Promise((resolve) => {
    const child = spawn(cmd!, args, { env: launch.env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    let output = '';
    const collect = (b: Buffer) => {
      if (output.length < outputLimit) output += b.toString('utf8');
    };
    child.stdout.on('data', collect);
    child.stderr.on('data', collect);
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        // Gone.
      }
    }, timeoutMs);
    child.once('error', (err) => {
      clearTimeout(timer);
      resolve({ code: null, output: err.message, timedOut: false });
    });
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, output, timedOut });
    });
  });
}
