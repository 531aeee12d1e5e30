// `npm run bench -- admission`: what admission costs a create. Pods opted in to injection and Bindings
// are created one at a time and 50 at once, with kvpool's webhooks in force and then with the webhook
// configurations removed (same apiserver, same run, the operator running throughout); client-side
// create latency for both, and the webhook's own handling time (the operator's histogram) and the
// apiserver's view of the call (its admission webhook histogram). BENCH_PRESENT Bindings (1,000 unless
// said) are on the backend before anything is measured.
import { fork } from 'node:child_process';
import { cpus } from 'node:os';
import { join } from 'node:path';
import { admissionNotInForce, awaitAdmissionInForce } from '../local/admission-in-force.ts';
import { ControlPlane } from '../local/control-plane.ts';
import { installCrds } from '../local/install-crds.ts';
import { freePort } from '../local/ports.ts';
import type { KubeClient, KubeObject } from '../src/kube/client.ts';
import { KubeClient as Client } from '../src/kube/client.ts';
import { waitFor } from '../src/kube/wait-for.ts';
import { type Families, parsePrometheusText } from '../src/store/prometheus.ts';
import { mutatingConfigurationName, validatingConfigurationName } from '../src/webhooks/configuration.ts';
import { applyWebhookConfigurations, webhookHooks } from '../src/webhooks/index.ts';
import { binding, externalBackend, pool } from '../test/builders/index.ts';
import { MooncakeStore } from '../test/support/mooncake-store.ts';
import { untilBinding } from '../test/support/pool-waits.ts';
import { apiserverMetrics, histogram, quantileSince } from './apiserver-metrics.ts';
import { cpuMs } from './cpu-time.ts';
import { ratio, round, spread, writeResult } from './results.ts';

const rounds = Number(process.env.BENCH_ROUNDS ?? 5);
const singles = Number(process.env.BENCH_SINGLES ?? 20);
const burst = 50;
/** Bindings already on the backend before anything is measured: admission must not grow with them. */
const present = Number(process.env.BENCH_PRESENT ?? 1000);
const ns = 'gpustack-system';
const team = 'team-a';

type Kind = 'pod' | 'binding';
let serial = 0;
function objectFor(kind: Kind, phase: string): KubeObject {
  serial += 1;
  const name = `${phase}-${serial}`;
  if (kind === 'binding')
    return binding(team, `b-${name}`, { pool: 'shared-dram', ceiling: '1Mi', domain: `d-${name}` });
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: `p-${name}`,
      namespace: team,
      labels: { 'kvcache.gpustack.ai/inject': 'true' },
      annotations: { 'kvcache.gpustack.ai/binding': 'cache', 'kvcache.gpustack.ai/engine': 'vLLM' },
    },
    spec: {
      containers: [
        {
          name: 'engine',
          image: 'gpustack/runner:cuda13.0-vllm0.29.0',
          command: ['vllm', 'serve', 'Qwen/Qwen2.5-7B-Instruct'],
        },
      ],
    },
  } as KubeObject;
}

/** Client-side create latencies: `singles` one after another, or 50 at once. */
async function creates(clients: KubeClient[], kind: Kind, phase: string, concurrent: number) {
  const ms: number[] = [];
  const one = async (c: KubeClient) => {
    const obj = objectFor(kind, phase);
    const t0 = performance.now();
    await c.create(obj);
    ms.push(performance.now() - t0);
  };
  if (concurrent === 1) for (let i = 0; i < singles; i++) await one(clients[0]!);
  else await Promise.all(Array.from({ length: concurrent }, (_, i) => one(clients[i % clients.length]!)));
  return ms;
}

/** Creates `count` Bindings (webhooks in force, 25 at a time) and waits until the last is Ready. */
async function createPresent(clients: KubeClient[], count: number) {
  let next = 0;
  const worker = async (c: KubeClient) => {
    while (next < count) {
      const i = next++;
      await c.create(
        binding(team, `present-${i}`, { pool: 'shared-dram', ceiling: '1Mi', domain: `present-${i}` }),
      );
    }
  };
  await Promise.all(Array.from({ length: 25 }, (_, i) => worker(clients[i % clients.length]!)));
  const last = `present-${count - 1}`;
  if (count > 0)
    await untilBinding(clients[0]!, team, last, 'Ready', (b) => b.status?.phase === 'Ready', 300_000);
}

/** Adds the bucket counts observed between two cumulative histograms into `into`. */
function addDelta(into: Map<number, number>, before: Map<number, number>, after: Map<number, number>) {
  for (const [le, v] of after) into.set(le, (into.get(le) ?? 0) + v - (before.get(le) ?? 0));
}

const hookPaths: Record<Kind, string> = {
  pod: '/mutate-pod-kvcache',
  binding: '/validate-kvcachepoolbinding',
};
/** The webhooks a create of the kind may call: the Pod's injection and its checks, or the Binding's. */
const hookNamesOf: Record<Kind, (name: string) => boolean> = {
  pod: (name) => name.endsWith('.kvcache.gpustack.ai'),
  binding: (name) => name === 'kvcachepoolbindings.worker.gpustack.ai',
};
const hookNames: Record<Kind, string> = {
  pod: 'inject.kvcache.gpustack.ai',
  binding: 'kvcachepoolbindings.worker.gpustack.ai',
};

const store = await MooncakeStore.start({ members: 1, memberBytes: 1024 << 20, tenants: [] });
const cp = await ControlPlane.start();
const admin = await Client.fromKubeconfigFile(cp.kubeconfigPath);
// Two clients: each keeps at most 32 connections, and 50 creates must be in flight at once.
const clients = [admin, await Client.fromKubeconfigFile(cp.kubeconfigPath)];
const webhookPort = await freePort();
const healthPort = await freePort();
const operator = fork(
  join(import.meta.dirname, 'admission-operator.ts'),
  [cp.kubeconfigPath, ns, String(webhookPort), String(healthPort)],
  { env: { ...process.env, KVPOOL_LOG_LEVEL: 'warn' } },
);
const operatorMetrics = async (): Promise<Families> =>
  parsePrometheusText(await (await fetch(`http://127.0.0.1:${healthPort}/metrics`)).text());
try {
  await installCrds(admin);
  // Applied, not created: the operator's process applies its own namespace with its account, at the same time.
  for (const name of [ns, team])
    await admin.apply({ apiVersion: 'v1', kind: 'Namespace', metadata: { name } } as KubeObject, {
      fieldManager: 'kvpool-bench',
    });
  await applyWebhookConfigurations(admin, webhookHooks, { url: `https://127.0.0.1:${webhookPort}` }, '');
  await new Promise((resolve, reject) => {
    operator.once('message', resolve);
    operator.once('exit', (code) => reject(new Error(`the operator exited (${code})`)));
  });
  await awaitAdmissionInForce(admin, 60_000);
  await admin.create(externalBackend('mooncake-dram', store));
  await admin.create(pool('shared-dram', { backend: 'mooncake-dram', total: '1Gi' }));
  await admin.create(binding(team, 'cache', { pool: 'shared-dram', ceiling: '64Mi', domain: 'cache' }));
  await untilBinding(admin, team, 'cache', 'Ready', (b) => b.status?.phase === 'Ready', 60_000);
  await createPresent(clients, present);
  const bindingsPresent = (
    await admin.list({ apiVersion: 'worker.gpustack.ai/v1', kind: 'KVCachePoolBinding' })
  ).items.length;
  console.log(`${bindingsPresent} Bindings on the backend before measuring`);

  // The CA bundle the operator set, to put the configurations back after each phase without them.
  const mutating = await admin.get<KubeObject & { webhooks: { clientConfig: { caBundle: string } }[] }>({
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'MutatingWebhookConfiguration',
    name: mutatingConfigurationName,
  });
  const caBundle = Buffer.from(mutating.webhooks[0]!.clientConfig.caBundle, 'base64').toString();
  const setPhase = async (phase: 'with' | 'without') => {
    if (phase === 'with') {
      await applyWebhookConfigurations(
        admin,
        webhookHooks,
        { url: `https://127.0.0.1:${webhookPort}` },
        caBundle,
      );
      await awaitAdmissionInForce(admin, 60_000);
      return;
    }
    for (const kind of ['ValidatingWebhookConfiguration', 'MutatingWebhookConfiguration']) {
      const name = kind.startsWith('Validating') ? validatingConfigurationName : mutatingConfigurationName;
      await admin.delete({ apiVersion: 'admissionregistration.k8s.io/v1', kind, name });
    }
    await waitFor(async () => ((await admissionNotInForce(admin)).length === 2 ? true : undefined), {
      what: 'the apiserver to stop calling the webhooks',
      timeoutMs: 60_000,
    });
  };

  const samples = new Map<string, number[]>();
  const served = new Map<string, Map<number, number>>();
  const called = new Map<string, Map<number, number>>();
  const loopLag = new Map<string, number>();
  // CPU each process used per create, by sample: what the webhook adds to every create, on two cores.
  const processes = { operator: operator.pid, ...cp.pids };
  const cpuNow = () =>
    Object.fromEntries(Object.entries(processes).map(([name, pid]) => [name, cpuMs(pid) ?? 0]));
  const cpuUsed = new Map<string, Record<string, number>>();
  // Calls of each of kvpool's webhooks the apiserver made, by sample (a Pod create may call more than one).
  const callsByHook = new Map<string, Record<string, number>>();
  const callCounts = (f: Families) => {
    const out: Record<string, number> = {};
    for (const s of f.get('apiserver_admission_webhook_admission_duration_seconds_count') ?? [])
      out[s.labels.name ?? '?'] = (out[s.labels.name ?? '?'] ?? 0) + s.value;
    return out;
  };
  for (let r = 0; r < rounds; r++) {
    // Phases alternate which goes first, so a change of load favours neither.
    for (const phase of r % 2 === 0 ? (['with', 'without'] as const) : (['without', 'with'] as const)) {
      await setPhase(phase);
      for (const kind of ['pod', 'binding'] as const) {
        for (const concurrent of [1, burst]) {
          const key = `${kind}@${concurrent}`;
          const [opBefore, apiBefore] = [await operatorMetrics(), await apiserverMetrics(admin)];
          const cpuBefore = cpuNow();
          const ms = await creates(clients, kind, phase, concurrent);
          const cpuAfter = cpuNow();
          const [opAfter, apiAfter] = [await operatorMetrics(), await apiserverMetrics(admin)];
          const used = cpuUsed.get(`${key}/${phase}`) ?? {};
          for (const name of Object.keys(processes))
            used[name] = (used[name] ?? 0) + cpuAfter[name]! - cpuBefore[name]!;
          cpuUsed.set(`${key}/${phase}`, used);
          samples.set(`${key}/${phase}`, [...(samples.get(`${key}/${phase}`) ?? []), ...ms]);
          // prom-client resets its event-loop delay histogram at each scrape: this is the sample's window.
          const lag = opAfter.get('nodejs_eventloop_lag_max_seconds')?.[0]?.value;
          if (lag !== undefined)
            loopLag.set(`${key}/${phase}`, Math.max(loopLag.get(`${key}/${phase}`) ?? 0, lag));
          if (phase === 'without') continue;
          const [callsBefore, callsAfter] = [callCounts(apiBefore), callCounts(apiAfter)];
          const calls = callsByHook.get(key) ?? {};
          // This kind's webhooks only: the operator's own writes to earlier Bindings call theirs meanwhile.
          for (const [name, n] of Object.entries(callsAfter))
            if (hookNamesOf[kind](name) && n > (callsBefore[name] ?? 0))
              calls[name] = (calls[name] ?? 0) + n - (callsBefore[name] ?? 0);
          callsByHook.set(key, calls);
          const mine = (l: Record<string, string>) => l.webhook === hookPaths[kind];
          const theirs = (l: Record<string, string>) => l.name === hookNames[kind];
          const h = 'controller_runtime_webhook_latency_seconds';
          const a = 'apiserver_admission_webhook_admission_duration_seconds';
          if (!served.has(key)) served.set(key, new Map());
          if (!called.has(key)) called.set(key, new Map());
          addDelta(served.get(key)!, histogram(opBefore, h, mine), histogram(opAfter, h, mine));
          addDelta(called.get(key)!, histogram(apiBefore, a, theirs), histogram(apiAfter, a, theirs));
        }
      }
    }
    console.log(`round ${r + 1} of ${rounds} done`);
  }
  const q = (d: Map<number, number> | undefined, p: number) => {
    const v = d && quantileSince(new Map(), d, p);
    return v === undefined ? undefined : round(v * 1000, 2);
  };
  const figures: Record<string, Record<string, unknown>> = {};
  for (const kind of ['pod', 'binding'] as const) {
    for (const concurrent of [1, burst]) {
      const key = `${kind}@${concurrent}`;
      const perCreate = (phase: string) => {
        const n = samples.get(`${key}/${phase}`)!.length;
        return Object.fromEntries(
          Object.entries(cpuUsed.get(`${key}/${phase}`)!).map(([name, ms]) => [name, round(ms / n, 2)]),
        );
      };
      const cpuWith = perCreate('with');
      const cpuWithout = perCreate('without');
      const added = Object.fromEntries(
        Object.keys(cpuWith).map((name) => [name, round(cpuWith[name]! - cpuWithout[name]!, 2)]),
      );
      const addedTotal = Object.values(added).reduce((a, b) => a + b, 0);
      figures[key] = {
        with: {
          clientCreateMs: spread(samples.get(`${key}/with`)!),
          webhookHandlingMs: { p50: q(served.get(key), 0.5), p99: q(served.get(key), 0.99) },
          apiserverWebhookCallMs: { p50: q(called.get(key), 0.5), p99: q(called.get(key), 0.99) },
          operatorEventLoopDelayMaxMs: round((loopLag.get(`${key}/with`) ?? Number.NaN) * 1000, 1),
        },
        without: {
          clientCreateMs: spread(samples.get(`${key}/without`)!),
          operatorEventLoopDelayMaxMs: round((loopLag.get(`${key}/without`) ?? Number.NaN) * 1000, 1),
        },
        cpuMsPerCreate: { with: cpuWith, without: cpuWithout, addedByWebhook: added },
        webhookCallsPerCreate: Object.fromEntries(
          Object.entries(callsByHook.get(key) ?? {}).map(([name, n]) => [
            name,
            round(n / samples.get(`${key}/with`)!.length, 2),
          ]),
        ),
        // The webhooks' added CPU for the whole burst, spread over every core: what the last create of
        // the burst waits for it while the cores are busy. (At 1 at once a sample's window is longer
        // with the webhooks, and background work counts in it: no figure is drawn.)
        ...(concurrent > 1 ? { addedCpuPerCoreMs: round((concurrent * addedTotal) / cpus().length, 1) } : {}),
      };
      console.log(`${key}: ${JSON.stringify(figures[key])}`);
    }
  }
  const overhead = Object.fromEntries(
    Object.entries(figures).map(([key, f]) => {
      const w = (f.with as { clientCreateMs: { p50: number; p99: number } }).clientCreateMs;
      const wo = (f.without as { clientCreateMs: { p50: number; p99: number } }).clientCreateMs;
      return [
        key,
        {
          p50Ms: round(w.p50 - wo.p50, 1),
          p99Ms: round(w.p99 - wo.p99, 1),
          p99WithOverWithout: ratio(w.p99, wo.p99),
        },
      ];
    }),
  );
  const at50 = [overhead['pod@50']!.p99Ms, overhead['binding@50']!.p99Ms];
  const bindingHandlingP99At50 = (figures['binding@50']!.with as { webhookHandlingMs: { p99?: number } })
    .webhookHandlingMs.p99;
  const bindingOverheadP99At1 = overhead['binding@1']!.p99Ms;
  const result = {
    bindingsPresent,
    setup: `a real apiserver (no nodes: Pods are stored, never run) and a real master with one member; the operator in its own process with the chart's account; the webhook configurations as the chart renders them, pointing at it. ${rounds} rounds, each with and without the webhooks in turn (which goes first alternates); per round, kind and concurrency: ${singles} creates one after another, or ${burst} at once`,
    objects: {
      pod: 'a vLLM Pod opted in to injection (label and annotations), injected by the mutating webhook',
      binding: `a KVCachePoolBinding on the pool, validated by the Binding webhook (its domain claimed with one create of a Lease named for backend and domain), with ${bindingsPresent} Bindings already on the backend`,
    },
    latencies: figures,
    overhead,
    target: { p99OverheadAt50Ms: 20, bindingHandlingP99At50Ms: 20, bindingP99OverheadAt1Ms: 20 },
    met: {
      p99OverheadAt50: at50.every((v) => v <= 20),
      bindingHandlingP99At50: bindingHandlingP99At50 !== undefined && bindingHandlingP99At50 <= 20,
      bindingP99OverheadAt1: bindingOverheadP99At1 <= 20,
    },
    notes:
      "Client-side: from the create request to its answer. webhookHandlingMs: the operator's controller_runtime_webhook_latency_seconds (request arrival to answer sent), apiserverWebhookCallMs: apiserver_admission_webhook_admission_duration_seconds (the call as the apiserver times it, TLS included); both are quantiles interpolated within histogram buckets. cpuMsPerCreate: CPU time (user and system, every thread, /proc/<pid>/stat at 10 ms resolution, summed over the rounds) the operator, the apiserver and etcd used per create, with and without the webhooks, and what the webhooks added; addedCpuPerCoreMs (50 at once): that added time for the whole burst divided by the cores, what the last create waits for it while the cores are busy (they are not always: an overhead below it means they idled meanwhile); at 1 at once a sample's window is longer with the webhooks and background work (the operator's passes, the apiserver's watches) counts in it, so its per-create figures overstate the webhooks' own. webhookCallsPerCreate: the apiserver's calls of each of the kind's webhooks per create. operatorEventLoopDelayMaxMs: the longest the event loop of the operator was held during a sample (its reconciles share the loop with the webhook server), the most over the rounds. \"without\": the configurations deleted and the apiserver no longer calling them (the operator keeps running and reconciling the Bindings created so far).",
  };
  console.log(JSON.stringify(result, null, 2));
  console.log(`wrote ${writeResult('admission', result)}`);
} finally {
  const exited = new Promise((resolve) => operator.once('exit', resolve));
  if (operator.exitCode === null) {
    operator.send({ type: 'stop' });
    await exited;
  }
  await clients[1]!.close();
  await admin.close();
  await cp.stop();
  await store.stop();
}
