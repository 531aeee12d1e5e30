// `npm run bench -- scale`: 1,000 namespaces, each with a Binding on one pool of one backend (a real
// multi-tenant mooncake_master and two members), then ceiling edits one at a time. The operator runs as
// `kvpool operator` in its own process with the chart's account; a counting proxy in front of the
// master's admin port counts what it asks the master; the apiserver counts the writes.
import { mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { parse } from 'yaml';
import { compileProduct } from '../images/compiled-source.ts';
import { operatorRuntime } from '../images/recipes.ts';
import { projectRoot } from '../images/toolchain.ts';
import { ControlPlane } from '../local/control-plane.ts';
import { installCrds } from '../local/install-crds.ts';
import { freePort } from '../local/ports.ts';
import type { ManagedProcess } from '../local/processes.ts';
import type { KVCachePoolBinding } from '../src/api/types.ts';
import { KubeClient, type KubeObject } from '../src/kube/client.ts';
import { waitFor } from '../src/kube/wait-for.ts';
import { parsePrometheusText } from '../src/store/prometheus.ts';
import { parseQuantityBytes } from '../src/vocabulary/quantity.ts';
import { externalBackend } from '../test/builders/index.ts';
import { MooncakeStore } from '../test/support/mooncake-store.ts';
import { accountKubeconfig, installOperatorAccess } from '../test/support/operator-access.ts';
import { startOperatorProcess } from '../test/support/operator-process.ts';
import { apiserverMetrics, isLeaseWrite, sum, writesByResource, writesSince } from './apiserver-metrics.ts';
import { CountingProxy, countsSince } from './counting-proxy.ts';
import { MemorySampler } from './memory-sampler.ts';
import { poolPassFigures } from './operator-figures.ts';
import { round, spread, writeResult } from './results.ts';

const bindings = Number(process.env.BENCH_BINDINGS ?? 1000);
const edits = Number(process.env.BENCH_EDITS ?? 1000);
const idleSeconds = Number(process.env.BENCH_IDLE_SECONDS ?? 60);
const inFlight = 32;
const MiB = 1 << 20;
const v1 = 'worker.gpustack.ai/v1';
const ns = 'gpustack-system';
const chartValues = parse(readFileSync(join(projectRoot, 'charts/kvpool/values.yaml'), 'utf8')) as {
  operator: { nodeOptions?: string };
};
const chartNodeOptions = chartValues.operator.nodeOptions ?? '';
const nsOf = (i: number) => `team-${String(i).padStart(4, '0')}`;

interface LedgerRow {
  tenant_id: string;
  requested_quota_bytes: number;
  effective_quota_bytes?: number;
}

async function ledger(store: MooncakeStore, tenant?: string): Promise<LedgerRow[]> {
  const q = tenant ? `?tenant_id=${encodeURIComponent(tenant)}` : '';
  const res = (await (await fetch(`${store.adminUrl}/api/v1/tenant_quotas${q}`)).json()) as {
    data: LedgerRow[] | LedgerRow | null;
  };
  return res.data === null ? [] : Array.isArray(res.data) ? res.data : [res.data];
}

async function inParallel(n: number, fn: (i: number) => Promise<unknown>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (next < n) await fn(next++);
    }),
  );
}

/** VmHWM (the peak) or VmRSS (now) of a process, in MiB. */
function rssMiB(pid: number, field: 'VmHWM' | 'VmRSS' = 'VmHWM'): number {
  const kib = new RegExp(`${field}:\\s+(\\d+)`).exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
  return round(Number(kib) / 1024, 1);
}

async function operatorMetrics(healthPort: number) {
  return parsePrometheusText(await (await fetch(`http://127.0.0.1:${healthPort}/metrics`)).text());
}

/** The operator's own counters: pool passes and API writes. */
async function operatorCounters(healthPort: number) {
  const f = await operatorMetrics(healthPort);
  // Passes that ran to the end (requeued for the observe interval); a pass that failed (a finalizer
  // patch on a Binding that changed meanwhile, say) is retried and counted apart.
  const pool = (f.get('controller_runtime_reconcile_total') ?? []).filter(
    (s) => s.labels.controller === 'kvcachepool',
  );
  const passes = pool.filter((s) => s.labels.result !== 'error').reduce((s, x) => s + x.value, 0);
  const failedPasses = pool.filter((s) => s.labels.result === 'error').reduce((s, x) => s + x.value, 0);
  const writes = (f.get('kvpool_api_writes_total') ?? []).reduce((s, x) => s + x.value, 0);
  const passSeconds =
    (f.get('controller_runtime_reconcile_time_seconds_sum') ?? []).find(
      (s) => s.labels.controller === 'kvcachepool',
    )?.value ?? 0;
  const heapUsedMiB = round((f.get('nodejs_heap_size_used_bytes')?.[0]?.value ?? 0) / MiB, 1);
  return { passes, failedPasses, writes, passSeconds, heapUsedMiB };
}

const dir = mkdtempSync(join(tmpdir(), 'kvpool-bench-scale-'));
const cp = await ControlPlane.start();
const admin = await KubeClient.fromKubeconfigFile(cp.kubeconfigPath);
// No oversubscription: every grant equals its ceiling, so an edit moves one tenant's grant only.
const store = await MooncakeStore.start({ members: 2, memberBytes: 1536 * MiB, tenants: [] });
const proxy = await CountingProxy.start(store.adminAddress);
let operator: ManagedProcess | undefined;
let account: Awaited<ReturnType<typeof accountKubeconfig>> | undefined;
try {
  await installCrds(admin);
  await installOperatorAccess(admin, ns);
  account = await accountKubeconfig(admin, cp.kubeconfigPath, ns);
  const healthPort = await freePort();
  // The chart's NODE_OPTIONS for the operator, plus BENCH_OPERATOR_NODE_OPTIONS to profile it
  // (`--cpu-prof --cpu-prof-dir=<dir>` writes a V8 CPU profile there when it exits).
  process.env.NODE_OPTIONS = [chartNodeOptions, process.env.BENCH_OPERATOR_NODE_OPTIONS]
    .filter(Boolean)
    .join(' ');
  // The operator runs as its image runs it: src/ compiled to JavaScript (images/compiled-source.ts), with
  // the image's Node flags and environment.
  const compiled = join(dir, 'compiled');
  compileProduct(join(projectRoot, 'src'), join(compiled, 'src'));
  symlinkSync(join(projectRoot, 'node_modules'), join(compiled, 'node_modules'));
  operator = startOperatorProcess(
    account.path,
    'bench',
    ['--namespace', ns, '--health-port', String(healthPort), '--webhook-port', '0'],
    join(dir, 'logs'),
    join(compiled, 'src', 'kvpool', 'main.js'),
    operatorRuntime,
  );
  delete process.env.NODE_OPTIONS;
  await waitFor(
    async () => {
      operator!.assertRunning();
      return (await fetch(`http://127.0.0.1:${healthPort}/readyz`)).ok ? true : undefined;
    },
    { what: 'the operator ready', timeoutMs: 60_000 },
  );
  const rssAtReady = rssMiB(operator.pid!, 'VmRSS');
  const memory = new MemorySampler(operator.pid!, `http://127.0.0.1:${healthPort}/metrics`);
  memory.start('ready');
  await admin.create(externalBackend('mooncake-dram', store, proxy.address));
  await admin.create({
    apiVersion: v1,
    kind: 'KVCachePool',
    metadata: { name: 'shared-dram' },
    spec: { backends: ['mooncake-dram'], quota: { total: '3Gi' } },
  } as KubeObject);
  await inParallel(bindings, (i) =>
    admin.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: nsOf(i) } } as KubeObject),
  );

  // Convergence: from the first Binding create until every Binding is Ready with the master's grant.
  const proxyAtStart = proxy.snapshot();
  const opAtStart = await operatorCounters(healthPort);
  const firstCreate = performance.now();
  memory.mark('creates');
  await inParallel(bindings, (i) =>
    admin.create({
      apiVersion: v1,
      kind: 'KVCachePoolBinding',
      metadata: { name: 'cache', namespace: nsOf(i) },
      spec: {
        poolRef: { name: 'shared-dram' },
        quota: { ceiling: '1Mi' },
        domain: { name: nsOf(i), blockSize: 16, dtype: 'bfloat16' },
      },
    } as KubeObject),
  );
  const lastCreate = performance.now();
  memory.mark('convergence');
  const apiAtLastCreate = writesByResource(await apiserverMetrics(admin));
  let progress = 0;
  await waitFor(
    async () => {
      operator!.assertRunning();
      const grants = new Map((await ledger(store)).map((r) => [r.tenant_id, r.effective_quota_bytes]));
      const list = await admin.list<KVCachePoolBinding>({ apiVersion: v1, kind: 'KVCachePoolBinding' });
      progress = list.items.filter((b) => {
        const granted = grants.get(b.spec.domain.name ?? 'default');
        return (
          b.status?.phase === 'Ready' &&
          granted !== undefined &&
          b.status.effectiveQuota !== undefined &&
          Number(parseQuantityBytes(b.status.effectiveQuota)) === granted
        );
      }).length;
      return progress === bindings ? true : undefined;
    },
    { what: `every Binding Ready with the master's grant`, timeoutMs: 600_000, intervalMs: 250 },
  ).catch((err: unknown) => {
    throw new Error(`${progress} of ${bindings} converged: ${err}`);
  });
  const converged = performance.now();
  const apiAtConverged = writesByResource(await apiserverMetrics(admin));
  const proxyAtConverged = proxy.snapshot();
  const opAtConverged = await operatorCounters(healthPort);
  const rssAtConverged = rssMiB(operator.pid!, 'VmRSS');
  console.log(`converged ${Math.round(converged - lastCreate)} ms after the last create`);

  memory.mark('idle');
  // Idle: nothing changes; the operator's passes go on (observe interval, store polls) and write nothing.
  await sleep(5000);
  const apiIdleStart = writesByResource(await apiserverMetrics(admin));
  const proxyIdleStart = proxy.snapshot();
  const opIdleStart = await operatorCounters(healthPort);
  await sleep(idleSeconds * 1000);
  const idleWrites = writesSince(apiIdleStart, writesByResource(await apiserverMetrics(admin)));
  const idleProxy = countsSince(proxyIdleStart, proxy.snapshot());
  const opIdleEnd = await operatorCounters(healthPort);
  console.log(`idle writes: ${JSON.stringify(idleWrites)}`);

  // Edits: one ceiling at a time, from the edit request until the master grants the new ceiling.
  const editMs: number[] = [];
  const ceilings = new Map<number, number>();
  const metricsAtEdits = await operatorMetrics(healthPort);
  memory.mark('edits');
  for (let e = 0; e < edits; e++) {
    const i = (e * 7) % bindings;
    const mib = (ceilings.get(i) ?? 1) === 1 ? 2 : 1;
    ceilings.set(i, mib);
    const t0 = performance.now();
    await admin.mergePatch(
      { apiVersion: v1, kind: 'KVCachePoolBinding', namespace: nsOf(i), name: 'cache' },
      { spec: { quota: { ceiling: `${mib}Mi` } } },
    );
    await waitFor(
      async () => {
        const [row] = await ledger(store, nsOf(i));
        return row?.requested_quota_bytes === mib * MiB && row.effective_quota_bytes === mib * MiB
          ? true
          : undefined;
      },
      { what: `${nsOf(i)} granted ${mib}Mi by the master`, timeoutMs: 60_000, intervalMs: 5 },
    );
    editMs.push(performance.now() - t0);
    if ((e + 1) % 100 === 0) console.log(`${e + 1} edits; last ${Math.round(editMs.at(-1)!)} ms`);
  }
  const editFigures = poolPassFigures(metricsAtEdits, await operatorMetrics(healthPort));
  const rss = rssMiB(operator.pid!);
  const atPeak = await memory.stop();

  const convergeProxy = countsSince(proxyAtStart, proxyAtConverged);
  const passes = opAtConverged.passes - opAtStart.passes;
  const idlePasses = opIdleEnd.passes - opIdleStart.passes;
  const ledgerLists = (c: Record<string, number>) => c['GET /api/v1/tenant_quotas'] ?? 0;
  const convergeWrites = writesSince(apiAtLastCreate, apiAtConverged);
  const convergedMs = Math.round(converged - lastCreate);
  // Not the operator's: Lease renewals, and the apiserver's own Endpoints for the kubernetes Service
  // (the operator's account may not write Endpoints at all).
  const notOperators = (k: string) => isLeaseWrite(k) || k === 'POST endpoints' || k === 'PUT endpoints';
  const idleOperatorWrites = sum(idleWrites, (k) => !notOperators(k));
  const edit = spread(editMs);
  const result = {
    setup: `${bindings} namespaces, one Binding each (ceiling 1Mi, its own domain) on one pool of one external backend: a real multi-tenant mooncake_master and 2 members x 1536Mi, no oversubscription`,
    how: "Integration-style: a real kube-apiserver and etcd, the real master and members as processes, and the operator as `kvpool operator` in its own process (src/ compiled to JavaScript, as the image runs it) with the chart's ServiceAccount and RBAC (leader election on, webhooks off: admission is the admission bench's). The local cluster's nodes are not used: their kubelets, containerd and CoreDNS would share the 2 cores with the operator and measure the machine rather than the operator; nothing here needs a node.",
    createMs: { bindings: Math.round(lastCreate - firstCreate), clientsInFlight: inFlight },
    convergedAfterLastCreateMs: convergedMs,
    master: {
      during: 'from the first Binding create until converged',
      poolPasses: passes,
      failedPoolPassesRetried: opAtConverged.failedPasses - opAtStart.failedPasses,
      poolPassMeanMs: round(
        ((opAtConverged.passSeconds - opAtStart.passSeconds) /
          (passes + opAtConverged.failedPasses - opAtStart.failedPasses)) *
          1000,
        0,
      ),
      ledgerListsPerPass: round(ledgerLists(convergeProxy) / passes, 2),
      requests: convergeProxy,
      idle: {
        windowSeconds: idleSeconds,
        poolPasses: idlePasses,
        ledgerListsPerPass: round(ledgerLists(idleProxy) / idlePasses, 2),
        requests: idleProxy,
      },
    },
    apiWrites: {
      convergence: {
        total: sum(convergeWrites),
        byResource: convergeWrites,
        during: 'from the last create until converged',
      },
      idle: {
        windowSeconds: idleSeconds,
        onKvpoolObjects: idleOperatorWrites,
        byResource: idleWrites,
        operatorCounted: opIdleEnd.writes - opIdleStart.writes,
      },
    },
    operatorNodeOptions: chartNodeOptions,
    operatorNodeArgs: operatorRuntime.nodeArgs,
    operatorEnv: operatorRuntime.env,
    operatorPeakRssMiB: rss,
    operatorRssMiB: { atReady: rssAtReady, atConverged: rssAtConverged },
    operatorMemoryAtPeak: atPeak,
    operatorHeapUsedAtEndMiB: (await operatorCounters(healthPort)).heapUsedMiB,
    ceilingEditToMasterGrantMs: edit,
    duringEdits: {
      poolPassesPerEdit: round((editFigures.pass.n ?? 0) / editMs.length, 2),
      ...editFigures,
    },
    targets: { convergedMs: 30_000, idleWrites: 0, rssMiB: 160, editP99Ms: 1000 },
    met: {
      converged: convergedMs <= 30_000,
      idleWrites: idleOperatorWrites === 0,
      rss: rss <= 160,
      editP99: edit.p99 <= 1000,
    },
    notes:
      "Master requests are counted by a proxy in front of the admin port that forwards everything unchanged; pool passes are the operator's controller_runtime_reconcile_total for the pool controller (controller kvcachepool). API writes are the apiserver's apiserver_request_total by verb; idle writes on kvpool's objects exclude Lease renewals (the operator's leader election and the apiserver's own identity Leases) and the apiserver's own Endpoints writes for the kubernetes Service (the operator's account may not write Endpoints); byResource shows everything. Peak RSS is the operator process's VmHWM at the end (after the edits); the operator runs with the chart's NODE_OPTIONS (operator.nodeOptions) and the image's Node flags and environment (operatorNodeArgs, operatorEnv). operatorMemoryAtPeak: the highest VmRSS read every 200 ms, the resident set by mapping at that moment (/proc/<pid>/smaps), and V8's heap and external memory from the operator's /metrics scraped when the resident set had grown (at most every 3 s: its series per Binding make a scrape itself a peak). An edit is timed from the patch request until the master's ledger (read directly, not through the proxy) has the new ceiling as requested and effective quota. operatorRssMiB is VmRSS once the operator is ready (no kvpool objects yet) and at convergence. duringEdits is read from the operator's own metrics over the edits: the pool key's wait in the work queue, the whole pass, each stage of a pass (kvpool_pool_pass_stage_seconds), and its apiserver requests by verb; p99AtMostMs is the histogram bucket bound holding the 99th percentile.",
  };
  console.log(JSON.stringify(result, null, 2));
  console.log(`wrote ${writeResult('scale', result)}`);
} finally {
  await operator?.stop();
  account?.remove();
  await proxy.stop();
  await store.stop();
  await admin.close();
  await cp.stop();
  // BENCH_KEEP_LOGS=1 keeps the operator's and the store's logs for a look after the run.
  if (process.env.BENCH_KEEP_LOGS) console.log(`logs kept in ${dir} and ${store.logDir}`);
  else rmSync(dir, { recursive: true, force: true });
}
