// `npm run bench -- ready`: on the local cluster's real nodes (the chart-installed operator), how long
// the walkthrough takes to be usable: Step 1 applied → the backend Ready with its full 16Gi read from
// the master; Step 3 applied → the first replica serving a completion through the store (and, later,
// the ModelDeployment's CacheAttached). Each run starts from nothing and tears everything down; median
// of 5.
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { projectRoot } from '../images/toolchain.ts';
import { LocalCluster, localInstanceType } from '../local/cluster.ts';
import { kubeBinary } from '../local/toolchain.ts';
import type { KVCacheBackend, KVCachePoolBinding, ModelDeployment } from '../src/api/types.ts';
import type { KubeObject } from '../src/kube/object.ts';
import { waitFor } from '../src/kube/wait-for.ts';
import { median, writeResult } from './results.ts';

const runs = Number(process.env.BENCH_RUNS ?? 5);
const v1 = 'worker.gpustack.ai/v1';
type Pod = KubeObject & { status?: { podIP?: string; conditions?: { type: string; status: string }[] } };
const step = (file: string) =>
  readFileSync(join(projectRoot, 'examples/walkthrough', file), 'utf8').replaceAll(
    'INSTANCE_TYPE',
    localInstanceType,
  );
const prompt = Array.from({ length: 128 }, (_, i) => `w${i}`).join(' ');

const root = mkdtempSync(join(tmpdir(), 'kvpool-bench-ready-'));
const cluster = await LocalCluster.start({ root });
const c = cluster.client;
const kubectl = async (args: string[], input = '') => {
  const child = promisify(execFile)(
    kubeBinary('kubectl'),
    ['--kubeconfig', cluster.kubeconfigPath, ...args],
    {
      maxBuffer: 16 << 20,
    },
  );
  child.child.stdin?.end(input);
  return (await child).stdout;
};
const until = <T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 300_000) =>
  waitFor(probe, { what, timeoutMs, intervalMs: 100 });
const condition = (
  o: { status?: { conditions?: { type: string; status: string; message?: string }[] } },
  type: string,
) => o.status?.conditions?.find((x) => x.type === type);

/** A replica that answers a completion through the store: blocks looked up and written. */
async function serving(): Promise<string | undefined> {
  const pods = await c.list<Pod>(
    { apiVersion: 'v1', kind: 'Pod', namespace: 'team-a' },
    { labelSelector: 'app.kubernetes.io/instance=qwen-chat' },
  );
  for (const p of pods.items) {
    if (!condition(p, 'Ready') || condition(p, 'Ready')!.status !== 'True' || !p.status?.podIP) continue;
    const res = await fetch(`http://${p.status.podIP}:8000/v1/completions`, {
      method: 'POST',
      body: JSON.stringify({ prompt, max_tokens: 4 }),
    }).catch(() => undefined);
    const body = (await res?.json().catch(() => undefined)) as {
      blocks?: number;
      hits?: number;
      misses?: number;
    };
    if (res?.ok && body.blocks && (body.hits ?? 0) + (body.misses ?? 0) === body.blocks)
      return p.metadata.name;
  }
  return undefined;
}

const step1: number[] = [];
const step3: number[] = [];
const attached: number[] = [];
try {
  await kubectl(['create', 'namespace', 'team-a']);
  await kubectl(['create', 'namespace', 'team-b']);
  for (let r = 0; r < runs; r++) {
    let t0 = performance.now();
    await kubectl(['apply', '--server-side', '-f', '-'], step('step-1-store.yaml'));
    await until('the backend Ready with 16Gi', async () => {
      const b = await c.get<KVCacheBackend>({
        apiVersion: v1,
        kind: 'KVCacheBackend',
        name: 'mooncake-dram',
      });
      return b.status?.phase === 'Ready' && b.status.capacity?.total === '16Gi' ? true : undefined;
    });
    step1.push(Math.round(performance.now() - t0));

    await kubectl(['apply', '--server-side', '-f', '-'], step('step-2-pool-binding.yaml'));
    await until('the Binding Ready', async () => {
      const b = await c.get<KVCachePoolBinding>({
        apiVersion: v1,
        kind: 'KVCachePoolBinding',
        namespace: 'team-a',
        name: 'team-a',
      });
      return b.status?.phase === 'Ready' ? true : undefined;
    });

    t0 = performance.now();
    await kubectl(['apply', '--server-side', '-f', '-'], step('step-3-workload.yaml'));
    await until('a replica serving through the store', serving);
    step3.push(Math.round(performance.now() - t0));
    await until('CacheAttached=True', async () => {
      const m = await c.get<ModelDeployment>({
        apiVersion: v1,
        kind: 'ModelDeployment',
        namespace: 'team-a',
        name: 'qwen-chat',
      });
      return condition(m, 'CacheAttached')?.status === 'True' ? true : undefined;
    });
    attached.push(Math.round(performance.now() - t0));
    console.log(
      `run ${r + 1}: step 1 ${step1.at(-1)} ms, step 3 serving ${step3.at(-1)} ms, attached ${attached.at(-1)} ms`,
    );

    // From nothing again: the workload, the pool and Binding, the store, and every Pod they ran. The
    // master keeps a domain that holds data, so the Binding waits for a drain, as an administrator's.
    await kubectl(['delete', '--wait=true', '--timeout=300s', '-f', '-'], step('step-3-workload.yaml'));
    const b = await c.get<KVCacheBackend>({ apiVersion: v1, kind: 'KVCacheBackend', name: 'mooncake-dram' });
    const admin = /at (\S+:\d+)/.exec(condition(b, 'LeaderAvailable')?.message ?? '')?.[1];
    if (admin) await fetch(`http://${admin}/api/v1/remove_all`, { method: 'POST' });
    for (const file of ['step-2-pool-binding.yaml', 'step-1-store.yaml'])
      await kubectl(['delete', '--wait=true', '--timeout=300s', '-f', '-'], step(file));
    await until('no store or engine Pods left', async () => {
      const left = [
        ...(await c.list<Pod>({ apiVersion: 'v1', kind: 'Pod', namespace: 'team-a' })).items,
        ...(
          await c.list<Pod>(
            { apiVersion: 'v1', kind: 'Pod', namespace: 'gpustack-system' },
            {
              labelSelector:
                'app.kubernetes.io/part-of=kvpool,app.kubernetes.io/component in (leader,member)',
            },
          )
        ).items,
      ];
      return left.length === 0 ? true : undefined;
    });
  }
} finally {
  await cluster.stop();
  rmSync(root, { recursive: true, force: true });
}

const result = {
  runs,
  setup:
    'the local cluster (2 real nodes, the operator installed by the chart); each run from nothing: Step 1, Step 2, Step 3, then everything deleted',
  step1ToReadyMs: {
    runs: step1,
    median: median(step1),
    what: 'apply of step-1-store.yaml → backend Ready with 16Gi read from the master',
  },
  step3ToFirstServingMs: {
    runs: step3,
    median: median(step3),
    what: 'apply of step-3-workload.yaml → a replica answers /v1/completions with its blocks looked up in and written to the store',
  },
  step3ToCacheAttachedMs: {
    runs: attached,
    median: median(attached),
    what: 'apply of step-3-workload.yaml → ModelDeployment CacheAttached=True (the operator has seen the replicas in the store)',
  },
  notes: 'Pods run the engine stand-in (no GPU here); images are on the nodes already.',
};
console.log(JSON.stringify(result, null, 2));
console.log(`wrote ${writeResult('ready', result)}`);
