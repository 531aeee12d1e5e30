// The runtime benchmark: 1,000 objects created at once against a real apiserver; reconciles per
// second, event-to-reconcile latency, API writes during an idle resync, and the controller's peak RSS.
// The same workload runs, on the same apiserver in the same run, through kvpool's runtime (src/kube)
// and through a minimal controller built on controller-runtime (bench/controller-runtime-baseline).
import { type ChildProcess, fork, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';
import { KubeClient, type KubeObject } from '../src/kube/client.ts';
import { ControlPlane } from '../src/local/control-plane.ts';
import { installCrds } from '../src/local/install-crds.ts';
import { waitFor } from '../src/local/wait-for.ts';
import { buildGoProgram } from './go-build.ts';
import { median, percentile, ratio, round, writeResult } from './results.ts';

const objects = Number(process.env.BENCH_OBJECTS ?? 1000);
const concurrency = 4;
const resyncMs = 5000;
const createClients = 32;

export interface WorkerStats {
  reconciles: number;
  resyncEvents: number;
  writes: number;
  firstReconcile: { createdAt: number; eventAt: number; startedAt: number }[];
  queueDepth: number;
}

interface Worker {
  child: ChildProcess;
  ready: Promise<unknown>;
  ask(): Promise<WorkerStats>;
  stop(): Promise<void>;
}

/** kvpool's runtime, in its own Node process (IPC messages). */
function kvpoolWorker(kubeconfig: string, namespace: string): Worker {
  const child = fork(
    join(import.meta.dirname, 'runtime-worker.ts'),
    [kubeconfig, namespace, String(concurrency), String(resyncMs)],
    { env: { ...process.env, KVPOOL_LOG_LEVEL: 'warn' } },
  );
  const next = () => new Promise<unknown>((resolve) => child.once('message', resolve));
  return {
    child,
    ready: next(),
    ask: async () => {
      const reply = next();
      child.send({ type: 'stats' });
      return (await reply) as WorkerStats;
    },
    stop: async () => {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.send({ type: 'stop' });
      await exited;
    },
  };
}

/** The controller-runtime baseline, a Go process (a line on stdin, a JSON line back). */
function baselineWorker(binary: string, kubeconfig: string, namespace: string): Worker {
  const child = spawn(binary, [kubeconfig, namespace, String(concurrency), String(resyncMs)], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const lines = createInterface({ input: child.stdout! });
  const waiting: ((line: string) => void)[] = [];
  lines.on('line', (line) => waiting.shift()?.(line));
  const next = () => new Promise<unknown>((resolve) => waiting.push((l) => resolve(JSON.parse(l))));
  return {
    child,
    ready: next(),
    ask: async () => {
      const reply = next();
      child.stdin!.write('stats\n');
      return (await reply) as WorkerStats;
    },
    stop: async () => {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.stdin!.write('stop\n');
      await exited;
    },
  };
}

/** The process's peak resident memory so far, from the kernel. */
function peakRssMiB(pid: number): number {
  const kib = Number(/VmHWM:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]);
  return round(kib / 1024, 1);
}

async function drive(client: KubeClient, worker: Worker, namespace: string) {
  await client.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: namespace } });
  await worker.ready;
  const started = Date.now();
  let next = 0;
  const create = async () => {
    while (next < objects) {
      const i = next++;
      await client.create({
        apiVersion: 'worker.gpustack.ai/v1',
        kind: 'KVCachePoolBinding',
        metadata: {
          name: `b-${i}`,
          namespace,
          annotations: { 'bench.kvpool/created-at': String(Date.now()) },
        },
        spec: {
          poolRef: { name: 'p' },
          quota: { ceiling: '1Gi' },
          domain: { name: `d-${i}`, blockSize: 16, dtype: 'bfloat16' },
        },
      } as KubeObject);
    }
  };
  await Promise.all(Array.from({ length: createClients }, create));
  const createdIn = Date.now() - started;
  const settled = await waitFor(
    async () => {
      const s = await worker.ask();
      return s.firstReconcile.length === objects && s.writes >= objects && s.queueDepth === 0 ? s : undefined;
    },
    { what: `${objects} objects reconciled in ${namespace}`, timeoutMs: 300_000, intervalMs: 200 },
  );
  const lastReconcile = Math.max(...settled.firstReconcile.map((r) => r.startedAt));
  const wallMs = lastReconcile - started;

  // Idle: only resyncs now. Measure writes across at least two resync periods.
  await sleep(2000);
  const idleStart = await worker.ask();
  await sleep(resyncMs * 2 + 1000);
  const idleEnd = await worker.ask();

  const createToReconcile = settled.firstReconcile.map((r) => r.startedAt - r.createdAt);
  const eventToReconcile = settled.firstReconcile.map((r) => r.startedAt - r.eventAt);
  return {
    createWallMs: createdIn,
    firstCreateToLastFirstReconcileMs: wallMs,
    reconcilesPerSecond: round((objects / wallMs) * 1000, 1),
    createToReconcileMs: { p50: median(createToReconcile), p99: percentile(createToReconcile, 99) },
    watchEventToReconcileMs: { p50: median(eventToReconcile), p99: percentile(eventToReconcile, 99) },
    idleResync: {
      windowMs: resyncMs * 2 + 1000,
      resyncEventsDelivered: idleEnd.resyncEvents - idleStart.resyncEvents,
      reconcilesRun: idleEnd.reconciles - idleStart.reconciles,
      apiWrites: idleEnd.writes - idleStart.writes,
    },
    controllerPeakRssMiB: peakRssMiB(worker.child.pid!),
  };
}

const baselineBinary = buildGoProgram(join(import.meta.dirname, 'controller-runtime-baseline'));
const cp = await ControlPlane.start();
const client = await KubeClient.fromKubeconfigFile(cp.kubeconfigPath);
const runs: { kvpool?: Awaited<ReturnType<typeof drive>>; baseline?: Awaited<ReturnType<typeof drive>> } = {};
try {
  await installCrds(client);
  for (const which of ['kvpool', 'baseline'] as const) {
    const namespace = `bench-${which}`;
    const worker =
      which === 'kvpool'
        ? kvpoolWorker(cp.kubeconfigPath, namespace)
        : baselineWorker(baselineBinary, cp.kubeconfigPath, namespace);
    try {
      runs[which] = await drive(client, worker, namespace);
      console.log(`${which}: ${JSON.stringify(runs[which])}`);
    } finally {
      await worker.stop();
    }
  }
} finally {
  await client.close();
  await cp.stop();
}
const k = runs.kvpool!;
const b = runs.baseline!;
const result = {
  objects,
  controllerConcurrency: concurrency,
  createClientsInFlight: createClients,
  kvpool: k,
  controllerRuntime: { version: 'sigs.k8s.io/controller-runtime v0.22.5', ...b },
  ratios: {
    reconcilesPerSecondKvpoolOverBaseline: ratio(k.reconcilesPerSecond, b.reconcilesPerSecond),
    eventToReconcileP50KvpoolOverBaseline: ratio(
      k.watchEventToReconcileMs.p50,
      b.watchEventToReconcileMs.p50,
    ),
    eventToReconcileP99KvpoolOverBaseline: ratio(
      k.watchEventToReconcileMs.p99,
      b.watchEventToReconcileMs.p99,
    ),
    peakRssKvpoolOverBaseline: ratio(k.controllerPeakRssMiB, b.controllerPeakRssMiB),
  },
  target: 'kvpool at least as fast: reconciles/s ratio >= 1, event-to-reconcile ratios <= 1',
  notes:
    "Both controllers run in their own process, one after the other, against the same apiserver (own namespace each), with 4 workers, a 5 s resync, and no client-side rate limit. createToReconcile: client-side create time to reconcile start (includes apiserver and watch delivery); watchEventToReconcile: informer event to reconcile start (queue wait). Peak RSS is the kernel's VmHWM of each process.",
};
console.log(JSON.stringify(result, null, 2));
console.log(`wrote ${writeResult('runtime', result)}`);
