// A real vLLM (its CPU build, the image the project builds) serving from the pool on the local
// cluster's nodes: Steps 1–2 of the walkthrough, then examples/vllm-cpu's two replicas. Replica B
// loads the KV replica A computed, through the store, and answers with A's log-probabilities; a
// replica in another Binding's domain finds nothing of it; the store replicates its metadata, so after
// two failovers under a stream of requests (none failing) B still loads what A stored. The engines share
// one cluster: each costs ~3.8 GiB resident and 2–3 minutes to start (each run prints both).
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import type { Pod } from 'kubernetes-types/core/v1.js';
import { projectRoot } from '../../images/toolchain.ts';
import { descendants, processTable } from '../../local/process-tree.ts';
import type { KVCachePoolBinding, ModelDeployment } from '../../src/api/types.ts';
import { clientConfigAnnotation } from '../../src/inject/types.ts';
import type { KubeObject } from '../../src/kube/object.ts';
import { parsePrometheusText } from '../../src/store/prometheus.ts';
import { engineFigure } from '../support/engine-metrics.ts';
import { conditionOf, type E2ECluster, startE2ECluster } from '../support/local-cluster.ts';
import { seedText } from '../support/seed.ts';
import { waitFor } from '../support/wait.ts';

const v1 = 'worker.gpustack.ai/v1';
const model = 'kvpool/llama-32m-random';
const blockSize = 64;
/** The master's object lease in this test: shorter than the members' freeze in the last test. */
const lease = '5s';
const example = (f: string) => readFileSync(join(projectRoot, 'examples/vllm-cpu', f), 'utf8');
/**
 * Another team's Binding and one replica of the same model in its domain. Its ceiling is below one
 * block (64 tokens × 16 KiB), so the master refuses every write of that replica.
 */
const otherBinding = `
apiVersion: ${v1}
kind: KVCachePoolBinding
metadata: { name: team-b, namespace: team-b }
spec:
  poolRef: { name: shared-dram }
  quota: { ceiling: 256Ki }
  domain: { name: llama-cpu-b, blockSize: ${blockSize}, dtype: float32 }
`;
const otherDeployment = `
apiVersion: ${v1}
kind: ModelDeployment
metadata: { name: llama-cpu, namespace: team-b }
spec:
  model: { name: ${model} }
  engine: { name: vLLM, version: 0.32.0 }
  kvCache: { poolRef: { name: team-b } }
  roles: [{ name: server, replicas: 1, instanceType: local-cpu, shmSize: 1Gi }]
`;

/** A long prompt of ordinary words, the same every run. */
const longPrompt = (words: number, seed = 1) =>
  Array.from({ length: words }, (_, i) => `word${(i * 7919 + seed * 104_729) % 5003}`).join(' ');

interface Completion {
  usage: { prompt_tokens: number };
  choices: { text: string; logprobs: { tokens: string[]; token_logprobs: number[] } }[];
}

async function complete(ip: string, prompt: string): Promise<Completion> {
  const res = await fetch(`http://${ip}:8000/v1/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model, prompt, max_tokens: 8, temperature: 0, logprobs: 1 }),
    signal: AbortSignal.timeout(120_000),
  });
  const body = await res.text();
  assert.equal(res.status, 200, `completion on ${ip}: HTTP ${res.status} ${body}`);
  return JSON.parse(body) as Completion;
}

/** The master's own figure (its admin port's /metrics), or undefined when not exported. */
async function masterFigure(e: E2ECluster, family: string) {
  const b = await e.backend('mooncake-dram');
  const admin = conditionOf(b, 'LeaderAvailable')!.message.match(/at (\S+:\d+)/)![1]!;
  const text = await (await fetch(`http://${admin}/metrics`)).text();
  return parsePrometheusText(text).get(family)?.[0]?.value;
}

describe('real vLLM replicas share their KV through the pool', () => {
  let e: E2ECluster;
  /** The replicas' Pod IPs: A and B in team-a, C in team-b. */
  let [a, b, c]: (string | undefined)[] = [];
  /** Replica B's answer to the long prompt, from KV it loaded. */
  let loadedAnswer: Completion['choices'][number]['logprobs'] | undefined;
  const ready = async (namespace: string, count: number) =>
    waitFor(
      async () => {
        const pods = (
          await e.cluster.client.list<KubeObject<Pod>>(
            { apiVersion: 'v1', kind: 'Pod', namespace },
            { labelSelector: 'app.kubernetes.io/instance=llama-cpu' },
          )
        ).items.filter(
          (p) =>
            !p.metadata.deletionTimestamp &&
            p.metadata.annotations?.[clientConfigAnnotation] &&
            p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'),
        );
        return pods.length === count ? pods.map((p) => p.status!.podIP!) : undefined;
      },
      { what: `${count} real vLLM replica(s) ready in ${namespace}`, timeoutMs: 900_000, intervalMs: 5000 },
    );
  /** Each engine's start-up (created → Ready) and resident memory (its container's processes, summed). */
  const engineFootprints = async (namespace: string) => {
    const pods = (
      await e.cluster.client.list<KubeObject<Pod>>(
        { apiVersion: 'v1', kind: 'Pod', namespace },
        { labelSelector: 'app.kubernetes.io/instance=llama-cpu' },
      )
    ).items;
    const table = processTable();
    const lines = [];
    for (const p of pods) {
      const readyAt = p.status?.conditions?.find((c) => c.type === 'Ready')?.lastTransitionTime;
      const startS = (Date.parse(readyAt!) - Date.parse(p.metadata.creationTimestamp!)) / 1000;
      const [pid] = await e.cluster.node(p.spec!.nodeName!).containerPids(namespace, p.metadata.name!);
      let rssKiB = 0;
      for (const q of [pid!, ...descendants(pid!, table)]) {
        try {
          rssKiB += Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${q}/status`, 'utf8'))?.[1] ?? 0);
        } catch {
          // Gone meanwhile (a compile worker).
        }
      }
      lines.push(
        `${namespace}/${p.metadata.name}: ready ${startS} s after created, ${(rssKiB / 1024).toFixed(0)} MiB resident`,
      );
    }
    return lines.join('\n');
  };
  const get = <T>(kind: string, namespace: string, name: string) =>
    e.cluster.client.get<T & KubeObject>({ apiVersion: v1, kind, namespace, name });

  before(
    async () => {
      e = await startE2ECluster({ realEngines: true });
      for (const ns of ['team-a', 'team-b']) await e.kubectl(['create', 'namespace', ns]);
      for (const step of ['step-1-store.yaml', 'step-2-pool-binding.yaml'])
        await e.kubectl(['apply', '--server-side', '-f', '-'], seedText(step));
      // The object lease shortened (the documented override), so a 15 s stall outlives it (the last test).
      await e.kubectl([
        'patch',
        'kvcachebackend',
        'mooncake-dram',
        '--type=merge',
        '-p',
        JSON.stringify({
          spec: {
            connection: {
              managed: {
                // Replicated metadata (decision 50): the last test fails the master over under the engines.
                leader: {
                  replicas: 2,
                  electionBackend: 'Etcd',
                  extraArgs: [`-default_kv_lease_ttl=${lease}`],
                },
              },
            },
          },
        }),
      ]);
      await e.kubectl(['apply', '--server-side', '-f', '-'], example('step-2-cpu-binding.yaml'));
      await e.kubectl(['apply', '--server-side', '-f', '-'], otherBinding);
      // As a user would: the workloads once their Bindings are Ready, so they start attached.
      for (const [ns, name] of [
        ['team-a', 'team-a-cpu'],
        ['team-b', 'team-b'],
      ] as const)
        await waitFor(
          async () =>
            (await get<KVCachePoolBinding>('KVCachePoolBinding', ns, name)).status?.phase === 'Ready'
              ? true
              : undefined,
          { what: `Binding ${ns}/${name} Ready` },
        );
      await e.kubectl(['apply', '--server-side', '-f', '-'], example('step-3-real-vllm.yaml'));
      await e.kubectl(['apply', '--server-side', '-f', '-'], otherDeployment);
      [a, b] = await ready('team-a', 2);
      [c] = await ready('team-b', 1);
      for (const ns of ['team-a', 'team-b']) console.log(await engineFootprints(ns));
      // Three engines start together on two cores: most of it is torch compiling the model.
    },
    { timeout: 1_800_000 },
  );
  after(() => e?.stop());

  it('replica B loads the prompt A computed: its own counters, the Binding’s usage, CacheAttached', async () => {
    const prompt = longPrompt(700);
    const first = await complete(a!, prompt);
    const n = first.usage.prompt_tokens;
    const fullBlocks = Math.floor((n - 1) / blockSize);
    assert.ok(fullBlocks >= 8, `the prompt is long: ${n} tokens`);
    // A writes its blocks after answering: B asks once A's own counters say they are stored.
    await waitFor(
      () => engineFigure(a!, 'vllm:mooncake_store_operation_keys_total', { operation: 'save_put' }),
      { what: 'replica A to store the prompt’s blocks', until: (k) => (k ?? 0) >= fullBlocks },
    );
    assert.equal(await engineFigure(a!, 'vllm:external_prefix_cache_hits_total'), 0, 'A computed it all');
    const hitsBefore = (await engineFigure(b!, 'vllm:external_prefix_cache_hits_total')) ?? 0;
    const second = await complete(b!, prompt);
    const hits = (await engineFigure(b!, 'vllm:external_prefix_cache_hits_total'))! - hitsBefore;
    assert.equal(hits, fullBlocks * blockSize, `B loaded every full block of the ${n}-token prompt`);
    assert.ok(
      ((await engineFigure(b!, 'vllm:prompt_tokens_by_source_total', { source: 'external_kv_transfer' })) ??
        0) >= hits,
    );

    // Loaded KV is the KV A computed: the same tokens with the same log-probabilities.
    const [x, y] = [first.choices[0]!.logprobs, second.choices[0]!.logprobs];
    loadedAnswer = y;
    assert.deepEqual(y.tokens, x.tokens);
    const drift = Math.max(...x.token_logprobs.map((p, i) => Math.abs(p - y.token_logprobs[i]!)));
    assert.ok(drift <= 1e-3, `log-probabilities differ by ${drift}`);
    console.log(`${n} prompt tokens; B loaded ${hits} from the pool; log-probability drift ${drift}`);

    const binding = await waitFor(
      async () => {
        const x = await get<KVCachePoolBinding>('KVCachePoolBinding', 'team-a', 'team-a-cpu');
        return x.status?.usage && x.status.usage !== '0' ? x : undefined;
      },
      { what: 'the Binding’s usage to grow' },
    );
    console.log(`team-a-cpu usage: ${binding.status?.usage}`);
    const md = await waitFor(
      async () => {
        const m = await get<ModelDeployment>('ModelDeployment', 'team-a', 'llama-cpu');
        return conditionOf(m, 'CacheAttached')?.reason === 'CacheActive' &&
          (m.status?.poolPrefix?.hitTokens ?? 0) >= hits
          ? m
          : undefined;
      },
      { what: 'CacheAttached=True and the tokens served from the pool in status' },
    );
    assert.equal(conditionOf(md, 'CacheAttached')?.status, 'True');
    console.log(`CacheAttached: ${conditionOf(md, 'CacheAttached')?.message}`);
    assert.ok(Number(md.status?.poolPrefix?.hitRatio) > 0, 'a hit ratio');
    const counted = await waitFor(
      async () => {
        const x = await get<KVCachePoolBinding>('KVCachePoolBinding', 'team-a', 'team-a-cpu');
        return (x.status?.poolPrefix?.hitTokens ?? 0) >= hits ? x : undefined;
      },
      { what: 'the Binding to count the tokens its deployments served from the pool' },
    );
    assert.equal(counted.status?.poolPrefix?.hitTokens, md.status?.poolPrefix?.hitTokens);
    const bin = join(e.cluster.root, 'bin');
    const status = await promisify(execFile)(join(bin, 'kubectl'), ['kvpool', 'status'], {
      env: { ...process.env, PATH: `${bin}:${process.env.PATH}`, KUBECONFIG: e.cluster.kubeconfigPath },
    });
    const line = `prompt tokens served from the pool: ${md.status!.poolPrefix!.hitTokens}`;
    assert.ok(status.stdout.includes(line), `kubectl kvpool status says '${line}':\n${status.stdout}`);
  });

  it('a replica in another Binding’s domain finds nothing of that prompt, computes B’s answer, and its refused writes turn CacheAttached=False', async () => {
    const queriedBefore = (await engineFigure(c!, 'vllm:external_prefix_cache_queries_total')) ?? 0;
    const r = await complete(c!, longPrompt(700));
    const queried = (await engineFigure(c!, 'vllm:external_prefix_cache_queries_total'))! - queriedBefore;
    assert.ok(queried >= r.usage.prompt_tokens - blockSize, `it asked the store (${queried} tokens)`);
    assert.equal(await engineFigure(c!, 'vllm:external_prefix_cache_hits_total'), 0);
    // Computed without the pool, the prompt gets the answer B gave from loaded KV.
    assert.ok(loadedAnswer, 'the first test ran');
    const own = r.choices[0]!.logprobs;
    assert.deepEqual(own.tokens, loadedAnswer.tokens);
    const drift = Math.max(
      ...own.token_logprobs.map((p, i) => Math.abs(p - loadedAnswer!.token_logprobs[i]!)),
    );
    assert.ok(drift <= 1e-3, `log-probabilities differ by ${drift}`);

    // Its writes do not fit the domain's ceiling: the engine counts them failed, and so does status.
    const failed = await waitFor(() => engineFigure(c!, 'vllm:mooncake_store_operation_failed_keys_total'), {
      what: 'the team-b replica to count its refused writes',
      until: (n) => (n ?? 0) > 0,
    });
    // No request since: the engine's count stands, and the condition's message names it.
    const failedKeysIn = (m: ModelDeployment) =>
      Number(/report (\d+) failed store key/.exec(conditionOf(m, 'CacheAttached')?.message ?? '')?.[1]);
    const md = await waitFor(
      async () => {
        const m = await get<ModelDeployment>('ModelDeployment', 'team-b', 'llama-cpu');
        const own = await engineFigure(c!, 'vllm:mooncake_store_operation_failed_keys_total');
        return conditionOf(m, 'CacheAttached')?.status === 'False' && failedKeysIn(m) === own ? m : undefined;
      },
      { what: 'CacheAttached=False naming the engine’s own failed-key count' },
    );
    const said = conditionOf(md, 'CacheAttached')!;
    assert.equal(said.reason, 'CacheOperationsFailing');
    assert.ok(failedKeysIn(md) >= failed!);
    console.log(`team-b: ${said.message}`);
  });

  it(`members frozen for 15 s under a load, past the ${lease} object lease: the request is answered (computed), and the store keeps every key`, async () => {
    // A prompt B has never seen: B must load it from the members.
    const prompt = longPrompt(500, 7);
    const save = () =>
      engineFigure(a!, 'vllm:mooncake_store_operation_keys_total', { operation: 'save_put' });
    const stored = (await save()) ?? 0;
    const computed = await complete(a!, prompt);
    const blocks = Math.floor((computed.usage.prompt_tokens - 1) / blockSize);
    await waitFor(save, {
      what: 'replica A to store the new prompt',
      until: (k) => (k ?? 0) >= stored + blocks,
    });
    const keysBefore = await masterFigure(e, 'master_key_count');
    const members = (
      await e.cluster.client.list<KubeObject<Pod>>(
        { apiVersion: 'v1', kind: 'Pod', namespace: e.cluster.namespace },
        { labelSelector: 'app.kubernetes.io/instance=mooncake-dram,app.kubernetes.io/component=member-0' },
      )
    ).items;
    assert.equal(members.length, 2);
    const pids: number[] = [];
    const table = processTable();
    for (const m of members) {
      const [pid] = await e.cluster
        .node(m.spec!.nodeName!)
        .containerPids(e.cluster.namespace, m.metadata.name!);
      pids.push(pid!, ...descendants(pid!, table));
    }
    const signal = (s: NodeJS.Signals) => {
      for (const pid of pids) {
        try {
          process.kill(pid, s);
        } catch {
          // Gone meanwhile.
        }
      }
    };
    const failedLoads = () =>
      engineFigure(b!, 'vllm:mooncake_store_operation_failed_keys_total', { operation: 'load_get' });
    const computedTokens = () =>
      engineFigure(b!, 'vllm:prompt_tokens_by_source_total', { source: 'local_compute' });
    const [failedBefore, computedBefore] = [(await failedLoads()) ?? 0, (await computedTokens()) ?? 0];
    const frozenAt = Date.now();
    signal('SIGSTOP');
    let answer: Completion;
    try {
      const pending = complete(b!, prompt);
      await new Promise((r) => setTimeout(r, 15_000));
      signal('SIGCONT');
      answer = await pending;
    } finally {
      signal('SIGCONT');
    }
    console.log(`B answered ${((Date.now() - frozenAt) / 1000).toFixed(1)} s after the members froze`);
    assert.deepEqual(answer.choices[0]!.logprobs.tokens, computed.choices[0]!.logprobs.tokens);
    // The load outlived its lease and failed, yet B gave A's answer: it computed what it could not
    // load (kv_load_failure_policy recompute) instead of failing the request. vLLM counts a prompt's
    // sources when it schedules it, before the load fails, so its local_compute count is only logged.
    const failed = ((await failedLoads()) ?? 0) - failedBefore;
    const computedAtScheduling = ((await computedTokens()) ?? 0) - computedBefore;
    console.log(
      `B's failed load keys: ${failed} of the prompt's ${blocks} blocks; local_compute counted at scheduling: ${computedAtScheduling}`,
    );
    assert.ok(failed > 0, 'the load stalled past the lease failed');
    // The master would have dropped a silent member's keys after its client TTL, which the freeze outlived.
    assert.equal(await masterFigure(e, 'master_key_count'), keysBefore, 'no key was lost');
    const segments = (await masterFigure(e, 'master_total_capacity_bytes')) ?? 0;
    assert.ok(segments >= 16 * 2 ** 30, `both members still mounted: ${segments} bytes`);
  });

  it('fails the master over twice under a stream of requests (SIGKILL, then a Pod delete): none fails, and B loads what A stored before', async () => {
    const prompt = longPrompt(400, 11);
    const save = () =>
      engineFigure(a!, 'vllm:mooncake_store_operation_keys_total', { operation: 'save_put' });
    const stored = (await save()) ?? 0;
    const computed = await complete(a!, prompt);
    const blocks = Math.floor((computed.usage.prompt_tokens - 1) / blockSize);
    await waitFor(save, { what: 'replica A to store the prompt', until: (k) => (k ?? 0) >= stored + blocks });
    const stream = requestStream([a!, b!]);
    try {
      for (const how of ['hard', 'graceful'] as const) {
        const took = await failOver(e, how);
        console.log(`${how} failover under the stream: another master served ${took} ms after`);
      }
    } finally {
      const { ok, failed } = await stream.stop();
      console.log(`request stream: ${ok} answered, ${failed.length} failed`);
      assert.deepEqual(failed, [], 'requests that failed during the failovers');
      assert.ok(ok > 0);
    }
    const hitsBefore = (await engineFigure(b!, 'vllm:external_prefix_cache_hits_total')) ?? 0;
    const answer = await complete(b!, prompt);
    const hits = (await engineFigure(b!, 'vllm:external_prefix_cache_hits_total'))! - hitsBefore;
    console.log(
      `after two failovers B loaded ${hits} of the prompt's ${computed.usage.prompt_tokens} tokens from the pool`,
    );
    assert.equal(hits, blocks * blockSize, 'every full block A stored before the failovers');
    assert.deepEqual(answer.choices[0]!.logprobs.tokens, computed.choices[0]!.logprobs.tokens);
  });
});

/** Short completions sent one after another to each replica until stopped; what failed, by message. */
function requestStream(replicas: string[]) {
  let running = true;
  let ok = 0;
  const failed: string[] = [];
  const loops = replicas.map(async (ip, r) => {
    for (let i = 0; running; i++) {
      try {
        await complete(ip, `${longPrompt(40, 1000 + r * 7 + (i % 5))} request ${i}`);
        ok += 1;
      } catch (err) {
        failed.push(`${ip}: ${(err as Error).message.slice(0, 200)}`);
      }
    }
  });
  return {
    async stop() {
      running = false;
      await Promise.all(loops);
      return { ok, failed };
    },
  };
}

/**
 * Fails mooncake-dram's serving master over: `hard` SIGKILLs its container's processes and deletes its
 * Pod at once (a node lost), `graceful` deletes the Pod (a drain). Resolves, in ms, when another master
 * serves and the backend is Ready with its members mounted again.
 */
async function failOver(e: E2ECluster, how: 'hard' | 'graceful'): Promise<number> {
  const ns = e.cluster.namespace;
  const leaders = () =>
    e.cluster.client
      .list<KubeObject<Pod>>(
        { apiVersion: 'v1', kind: 'Pod', namespace: ns },
        { labelSelector: 'app.kubernetes.io/instance=mooncake-dram,app.kubernetes.io/component=leader' },
      )
      .then((l) => l.items.filter((p) => !p.metadata.deletionTimestamp));
  const readyOf = (p: KubeObject<Pod>) =>
    p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True');
  const old = await waitFor(async () => (await leaders()).find(readyOf), { what: 'the serving leader' });
  const startedAt = Date.now();
  if (how === 'hard') {
    const table = processTable();
    const roots = await e.cluster.node(old.spec!.nodeName!).containerPids(ns, old.metadata.name!);
    for (const pid of roots.flatMap((p) => [p, ...descendants(p, table)])) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // Gone with its parent.
      }
    }
  }
  await e.cluster.client.request('DELETE', `/api/v1/namespaces/${ns}/pods/${old.metadata.name}`, {
    body: how === 'hard' ? { gracePeriodSeconds: 0 } : {},
  });
  await waitFor(
    async () => {
      const next = (await leaders()).find((p) => readyOf(p) && p.metadata.name !== old.metadata.name);
      const b = await e.backend('mooncake-dram');
      return next && b.status?.phase === 'Ready' && b.status.capacity?.total === '16Gi' ? true : undefined;
    },
    { what: 'another master serving, the backend Ready with 16Gi', timeoutMs: 180_000, intervalMs: 250 },
  );
  return Date.now() - startedAt;
}
