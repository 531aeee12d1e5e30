// The runtime benchmark: 1,000 objects created at once against a real apiserver; reconciles per
// second, event-to-reconcile latency, API writes during an idle resync, and the controller's peak RSS.
import { fork } from 'node:child_process';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { KubeClient, type KubeObject } from '../src/kube/client.ts';
import { ControlPlane } from '../src/local/control-plane.ts';
import { installCrds } from '../src/local/install-crds.ts';
import { waitFor } from '../src/local/wait-for.ts';
import { median, percentile, writeResult } from './results.ts';

const objects = Number(process.env.BENCH_OBJECTS ?? 1000);
const concurrency = 4;
const resyncMs = 5000;
const namespace = 'bench';

interface Stats {
  reconciles: number;
  resyncEvents: number;
  writes: number;
  firstReconcile: { createdAt: number; eventAt: number; startedAt: number }[];
  maxRssKiB: number;
  queueDepth: number;
}

const cp = await ControlPlane.start();
const client = await KubeClient.fromKubeconfigFile(cp.kubeconfigPath);
const worker = fork(
  join(import.meta.dirname, 'runtime-worker.ts'),
  [cp.kubeconfigPath, namespace, String(concurrency), String(resyncMs)],
  {
    env: { ...process.env, KVPOOL_LOG_LEVEL: 'warn' },
  },
);
const ask = (): Promise<Stats> =>
  new Promise((resolve) => {
    worker.once('message', (m) => resolve(m as Stats));
    worker.send({ type: 'stats' });
  });

try {
  await installCrds(client);
  await client.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: namespace } });
  await new Promise((resolve) => worker.once('message', resolve));

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
  await Promise.all(Array.from({ length: 32 }, create));
  const createdIn = Date.now() - started;
  const settled = await waitFor(
    async () => {
      const s = await ask();
      return s.firstReconcile.length === objects && s.writes >= objects && s.queueDepth === 0 ? s : undefined;
    },
    { what: `${objects} objects reconciled`, timeoutMs: 300_000, intervalMs: 200 },
  );
  const lastReconcile = Math.max(...settled.firstReconcile.map((r) => r.startedAt));
  const wallMs = lastReconcile - started;

  // Idle: only resyncs now. Measure writes across at least two resync periods.
  await sleep(2000);
  const idleStart = await ask();
  await sleep(resyncMs * 2 + 1000);
  const idleEnd = await ask();

  const createToReconcile = settled.firstReconcile.map((r) => r.startedAt - r.createdAt);
  const eventToReconcile = settled.firstReconcile.map((r) => r.startedAt - r.eventAt);
  const result = {
    objects,
    controllerConcurrency: concurrency,
    createClientsInFlight: 32,
    createWallMs: createdIn,
    firstCreateToLastFirstReconcileMs: wallMs,
    reconcilesPerSecond: Math.round((objects / wallMs) * 1000 * 10) / 10,
    createToReconcileMs: { p50: median(createToReconcile), p99: percentile(createToReconcile, 99) },
    watchEventToReconcileMs: { p50: median(eventToReconcile), p99: percentile(eventToReconcile, 99) },
    idleResync: {
      windowMs: resyncMs * 2 + 1000,
      resyncEventsDelivered: idleEnd.resyncEvents - idleStart.resyncEvents,
      reconcilesRun: idleEnd.reconciles - idleStart.reconciles,
      apiWrites: idleEnd.writes - idleStart.writes,
    },
    controllerPeakRssMiB: Math.round((idleEnd.maxRssKiB / 1024) * 10) / 10,
    notes:
      'createToReconcile: client-side create time to reconcile start (includes apiserver and watch delivery); watchEventToReconcile: informer event to reconcile start (queue wait). Controller runs in its own process; RSS is its peak.',
  };
  console.log(JSON.stringify(result, null, 2));
  console.log(`wrote ${writeResult('runtime', result)}`);
} finally {
  worker.send({ type: 'stop' });
  await new Promise((resolve) => worker.once('exit', resolve));
  await client.close();
  await cp.stop();
}
