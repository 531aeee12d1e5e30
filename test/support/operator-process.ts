// Runs `kvpool operator` as a real child process against the shared control plane.
import { join } from 'node:path';
import { projectRoot } from '../../images/toolchain.ts';
import { type ManagedProcess, startProcess } from '../../local/processes.ts';

/**
 * `program` is the `kvpool` entry to run: the checkout's TypeScript, or a compiled tree's (as images run);
 * `runtime` the Node flags before it and the environment added, as an image sets them.
 */
export function startOperatorProcess(
  kubeconfig: string,
  identity: string,
  args: string[],
  logDir: string,
  program = join(projectRoot, 'src', 'kvpool', 'main.ts'),
  runtime: { nodeArgs: string[]; env: string[] } = { nodeArgs: [], env: [] },
): ManagedProcess {
  const env = Object.fromEntries(
    runtime.env.map((e) => [e.slice(0, e.indexOf('=')), e.slice(e.indexOf('=') + 1)]),
  );
  return startProcess(`operator-${identity}`, process.execPath, {
    logDir,
    args: [
      ...runtime.nodeArgs,
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
    env: { ...process.env, ...env, KVPOOL_LOG_LEVEL: 'info' },
  });
}
