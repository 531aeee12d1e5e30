// Runs a build command, rejecting with its output when it fails.
import { spawn } from 'node:child_process';

export interface RunOptions {
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  /** Print the command's output as it goes (long steps), instead of only on failure. */
  stream?: boolean;
  input?: string;
}

export function run(cmd: string, args: string[], options: RunOptions = {}): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, {
      env: options.env ?? process.env,
      cwd: options.cwd,
      stdio: [options.input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
    });
    let out = '';
    const collect = (d: Buffer) => {
      out += d;
      if (options.stream) process.stderr.write(d);
    };
    child.stdout?.on('data', collect);
    child.stderr?.on('data', collect);
    if (options.input !== undefined) child.stdin?.end(options.input);
    child.on('error', reject);
    child.on('close', (code) => {
      if (code === 0) resolve(out);
      else reject(new Error(`${cmd} ${args.join(' ')} failed (exit ${code}):\n${out.slice(-4000)}`));
    });
  });
}
