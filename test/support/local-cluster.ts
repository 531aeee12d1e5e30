// The embedded local cluster for end-to-end tests: its own root, kubectl against it, and waits on
// what users read (kubectl output and status).
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { KVCacheBackend } from '../../src/api/types.ts';
import { LocalCluster, type LocalClusterOptions } from '../../src/local/cluster.ts';
import { kubeBinary } from '../../src/local/toolchain.ts';
import { waitFor } from '../../src/local/wait-for.ts';

export interface E2ECluster {
  cluster: LocalCluster;
  kubectl(args: string[], input?: string): Promise<string>;
  backend(name: string): Promise<KVCacheBackend>;
  stop(): Promise<void>;
}

export async function startE2ECluster(options: Omit<LocalClusterOptions, 'root'> = {}): Promise<E2ECluster> {
  const root = mkdtempSync(join(tmpdir(), 'kvpool-e2e-'));
  const cluster = await LocalCluster.start({ root, ...options });
  const run = promisify(execFile);
  return {
    cluster,
    async kubectl(args, input) {
      const child = run(kubeBinary('kubectl'), ['--kubeconfig', cluster.kubeconfigPath, ...args], {
        maxBuffer: 16 << 20,
      });
      child.child.stdin?.end(input ?? '');
      try {
        return (await child).stdout;
      } catch (err) {
        const e = err as { stderr?: string; message: string };
        throw new Error(e.stderr?.trim() || e.message);
      }
    },
    backend: (name) =>
      cluster.client.get<KVCacheBackend>({
        apiVersion: 'worker.gpustack.ai/v1',
        kind: 'KVCacheBackend',
        name,
      }),
    async stop() {
      await cluster.stop();
      rmSync(root, { recursive: true, force: true });
    },
  };
}

export function conditionOf(
  obj: { status?: { conditions?: { type: string; status: string; reason: string; message: string }[] } },
  type: string,
) {
  return obj.status?.conditions?.find((c) => c.type === type);
}

/** Polls `probe` (a read of what users see) until it yields a value. */
export function eventually<T>(
  what: string,
  probe: () => Promise<T | undefined>,
  timeoutMs = 60_000,
): Promise<T> {
  return waitFor(probe, { what, timeoutMs, intervalMs: 100 });
}
