// Access to the run's shared control plane (see global-setup.ts) for integration tests.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { kubeBinary } from '../../local/toolchain.ts';
import { KubeClient, type KubeObject } from '../../src/kube/client.ts';

export function testKubeconfig(): string {
  const path = process.env.KVPOOL_TEST_KUBECONFIG;
  if (!path) throw new Error('KVPOOL_TEST_KUBECONFIG is unset: run integration tests through `npm test`');
  return path;
}

export function testClient(): Promise<KubeClient> {
  return KubeClient.fromKubeconfigFile(testKubeconfig());
}

/** Runs the real kubectl against the shared control plane; rejects with its stderr on failure. */
export async function kubectl(args: string[], input?: string): Promise<string> {
  const run = promisify(execFile);
  const child = run(kubeBinary('kubectl'), ['--kubeconfig', testKubeconfig(), ...args], {
    maxBuffer: 16 << 20,
  });
  // kubectl may exit before it reads its input; its own error says why.
  child.child.stdin?.on('error', () => {});
  if (input !== undefined) child.child.stdin?.end(input);
  try {
    return (await child).stdout;
  } catch (err) {
    const e = err as { stderr?: string; message: string };
    throw new Error(e.stderr?.trim() || e.message);
  }
}

export async function ensureNamespace(client: KubeClient, name: string): Promise<void> {
  await client.apply({ apiVersion: 'v1', kind: 'Namespace', metadata: { name } } as KubeObject, {
    fieldManager: 'kvpool-test',
  });
}

let counter = 0;
/** A DNS-safe name unique within this run. */
export function uniqueName(prefix: string): string {
  counter += 1;
  return `${prefix}-${process.pid.toString(36)}-${counter}`;
}
