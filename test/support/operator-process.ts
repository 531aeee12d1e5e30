// Runs `kvpool operator` as a real child process against the shared control plane.
import { join } from 'node:path';
import { projectRoot } from '../../images/toolchain.ts';
import { type ManagedProcess, startProcess } from '../../local/processes.ts';

/** `program` is the `kvpool` entry to run: the checkout's TypeScript, or a compiled tree's (as images run). */
export function startOperatorProcess(
  kubeconfig: string,
  identity: string,
  args: string[],
  logDir: string,
  program = join(projectRoot, 'src', 'kvpool', 'main.ts'),
): ManagedProcess {
  return startProcess(`operator-${identity}`, process.execPath, {
    logDir,
    args: [
      program,
      'operator',
      '--kubeconfig',
      kubeconfig,
      '--identity',
      identity,
      '--health-port',
      '0',
      '--webhook-port',
      '0',
      ...args,
    ],
    env: { ...process.env, KVPOOL_LOG_LEVEL: 'info' },
  });
}
