// The embedded local cluster for end-to-end tests: its own root, kubectl against it, and waits on
// what users read (kubectl output and status).
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { LocalCluster, type LocalClusterOptions } from '../../local/cluster.ts';
import { kubeBinary } from '../../local/toolchain.ts';
import type { KVCacheBackend } from '../../src/api/types.ts';
import { parsePrometheusText } from '../../src/store/prometheus.ts';

/** The chart's operator Pods and the port of their /metrics (values.yaml: metrics.port). */
const operatorSelector = 'app.kubernetes.io/component=operator';
const operatorMetricsPort = 8081;

export interface E2ECluster {
  cluster: LocalCluster;
  kubectl(args: string[], input?: string): Promise<string>;
  backend(name: string): Promise<KVCacheBackend>;
  /** Reconciles `controller` has finished, summed over the operator's Pods (their /metrics). */
  reconciles(controller: string): Promise<number>;
  stop(): Promise<void>;
}

export async function startE2ECluster(options: Omit<LocalClusterOptions, 'root'> = {}): Promise<E2ECluster> {
  const root = mkdtempSync(join(tmpdir(), 'kvpool-e2e-'));
  const cluster = await LocalCluster.start({ root, ...options });
  const run = promisify(execFile);
  const kubectl = async (args: string[], input?: string) => {
    const child = run(kubeBinary('kubectl'), ['--kubeconfig', cluster.kubeconfigPath, ...args], {
      maxBuffer: 16 << 20,
    });
    // kubectl may exit before it reads its input; the broken pipe is its failure to report, not ours.
    child.child.stdin?.on('error', () => {});
    child.child.stdin?.end(input ?? '');
    try {
      return (await child).stdout;
    } catch (err) {
      const e = err as { stderr?: string; message: string };
      throw new Error(e.stderr?.trim() || e.message);
    }
  };
  return {
    cluster,
    kubectl,
    backend: (name) =>
      cluster.client.get<KVCacheBackend>({
        apiVersion: 'worker.gpustack.ai/v1',
        kind: 'KVCacheBackend',
        name,
      }),
    async reconciles(controller) {
      const pods = (
        await kubectl(['-n', cluster.namespace, 'get', 'pods', '-l', operatorSelector, '-o', 'name'])
      )
        .split('\n')
        .filter(Boolean);
      let total = 0;
      for (const pod of pods) {
        const path = `/api/v1/namespaces/${cluster.namespace}/pods/${pod.slice('pod/'.length)}:${operatorMetricsPort}/proxy/metrics`;
        const text = await kubectl(['get', '--raw', path]).catch(() => '');
        for (const s of parsePrometheusText(text).get('controller_runtime_reconcile_total') ?? [])
          if (s.labels.controller === controller) total += s.value;
      }
      return total;
    },
    async stop() {
      await saveDiagnostics(cluster, kubectl).catch(() => undefined);
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

/**
 * What a failed end-to-end test needs to be understood after its cluster is gone: every Pod, every
 * Event, and the logs (previous runs included) of the operator's and the store's Pods. Written for
 * each test file's cluster, over the last run's, under <tmp>/kvpool-e2e-diagnostics/<test file>.
 */
async function saveDiagnostics(cluster: LocalCluster, kubectl: (args: string[]) => Promise<string>) {
  const file = (process.argv[1] ?? 'e2e')
    .split('/')
    .at(-1)!
    .replace(/\.test\.ts$/, '');
  const dir = join(tmpdir(), 'kvpool-e2e-diagnostics', file);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const save = async (name: string, args: string[]) =>
    writeFileSync(join(dir, name), await kubectl(args).catch((err: Error) => err.message));
  await save('pods.txt', ['get', 'pods', '-A', '-o', 'wide']);
  await save('events.txt', ['get', 'events', '-A', '--sort-by=.lastTimestamp']);
  for (const ns of new Set([cluster.namespace, 'gpustack-system'])) {
    const pods = (await kubectl(['-n', ns, 'get', 'pods', '-o', 'name']).catch(() => ''))
      .split('\n')
      .filter(Boolean);
    for (const pod of pods) {
      const name = pod.replace('pod/', '');
      await save(`${ns}_${name}.log`, ['-n', ns, 'logs', name, '--all-containers', '--timestamps']);
      await save(`${ns}_${name}.previous.log`, ['-n', ns, 'logs', name, '--all-containers', '--previous']);
    }
  }
}
