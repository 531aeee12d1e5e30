// The Lease timings considered for the store, each measured with kvpool-store leaders run as processes
// against a real apiserver and the wheel's mooncake_master: hard-kill failover (SIGKILL of the leader's
// whole process group until the standby holds the Lease and is ready) and the longest API outage the
// leader rides out with the same master, for refused connections and for calls that hang. The outage is
// a network fault injected by a TCP relay between the leader and the apiserver.
import { mkdtempSync, rmSync } from 'node:fs';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { ControlPlane } from '../local/control-plane.ts';
import { KubeClient } from '../src/kube/client.ts';
import {
  guaranteedOutageMs,
  type LeaseTimings,
  leaseTimingFlags,
  storeLeaseDefaults,
} from '../src/kube/lease-timing.ts';
import { waitFor } from '../src/kube/wait-for.ts';
import { ApiRelay, type RelayMode } from '../test/support/api-relay.ts';
import { LeaseRecorder } from '../test/support/lease-recorder.ts';
import { masterPid, probe, type StoreLeader, startStoreLeader } from '../test/support/store-program.ts';
import { median } from './results.ts';

export const consideredTimings: LeaseTimings[] = [
  { leaseDurationMs: 5000, renewDeadlineMs: 3500, retryPeriodMs: 500 },
  { leaseDurationMs: 7000, renewDeadlineMs: 6500, retryPeriodMs: 200 },
  storeLeaseDefaults,
  { leaseDurationMs: 8000, renewDeadlineMs: 7500, retryPeriodMs: 250 },
  { leaseDurationMs: 10000, renewDeadlineMs: 9000, retryPeriodMs: 500 },
  { leaseDurationMs: 15000, renewDeadlineMs: 10000, retryPeriodMs: 2000 },
];

const ns = 'bench-timings';
const trialsPerLength = Number(process.env.BENCH_OUTAGE_TRIALS ?? 2);
let host = 0;

interface Ctx {
  cp: ControlPlane;
  client: KubeClient;
  logDir: string;
  leaders: StoreLeader[];
}

function pod(prefix: string) {
  host += 1;
  return {
    name: `${prefix}-${host}`,
    namespace: ns,
    ip: `127.62.${Math.floor(host / 250)}.${(host % 250) + 1}`,
  };
}

async function leader(ctx: Ctx, lease: string, t: LeaseTimings, kubeconfig?: string): Promise<StoreLeader> {
  const flags = ['--election=Kubernetes', `--lease=${ns}/${lease}`, ...leaseTimingFlags(t)];
  const l = await startStoreLeader({ pod: pod('leader'), flags, logDir: ctx.logDir, kubeconfig });
  ctx.leaders.push(l);
  return l;
}

const isReady = async (l: StoreLeader) => {
  try {
    return (await probe(l, '/readyz')).status === 200;
  } catch {
    return false;
  }
};
const ready = (l: StoreLeader, timeoutMs = 60_000) =>
  waitFor(async () => ((await isReady(l)) ? true : undefined), {
    what: `${l.pod.name} ready`,
    timeoutMs,
    intervalMs: 20,
  });

/** SIGKILL of the holder's process group: the time until the standby holds the Lease, and is ready. */
async function hardKills(ctx: Ctx, t: LeaseTimings, runs: number) {
  const lease = `kill-${t.leaseDurationMs}-${t.renewDeadlineMs}-${t.retryPeriodMs}`;
  const recorder = LeaseRecorder.start(ctx.client, ns, lease);
  const taken: number[] = [];
  const readyAfter: number[] = [];
  try {
    let current = await leader(ctx, lease, t);
    await ready(current);
    for (let i = 0; i < runs; i++) {
      const standby = await leader(ctx, lease, t);
      await waitFor(
        async () =>
          (await probe(standby, '/readyz')).reason.startsWith('standby: the Lease is held')
            ? true
            : undefined,
        {
          what: 'the standby to see the holder',
          timeoutMs: 30_000,
        },
      );
      // A random phase against the renewals and the standby's polls.
      await sleep(Math.random() * t.retryPeriodMs);
      const t0 = performance.now();
      current.process.signal('SIGKILL');
      taken.push(Math.round((await recorder.waitForHolder(standby.identity, t0, 60_000)) - t0));
      await ready(standby);
      readyAfter.push(Math.round(performance.now() - t0));
      console.log(`  hard kill ${i + 1}: Lease taken ${taken.at(-1)} ms, ready ${readyAfter.at(-1)} ms`);
      current = standby;
    }
    await current.process.stop();
  } finally {
    await recorder.stop();
  }
  return {
    leaseTakenMs: { runs: taken, median: median(taken) },
    readyMs: { runs: readyAfter, median: median(readyAfter) },
  };
}

/** One outage of `lengthMs` at a random phase: whether the same master still serves as the holder. */
async function survives(l: StoreLeader, relay: ApiRelay, mode: RelayMode, lengthMs: number, t: LeaseTimings) {
  const pid = masterPid(l);
  await sleep(Math.random() * t.retryPeriodMs);
  await relay.set(mode);
  await sleep(lengthMs);
  await relay.set('pass');
  // Long enough for a renewal to land, or for a stood-down replica to be seen without its master.
  await sleep(t.retryPeriodMs * 2 + 200);
  const kept = pid !== undefined && masterPid(l) === pid;
  if (!kept) await ready(l); // it campaigns again and takes its own Lease back; wait for the next trial
  return kept;
}

/**
 * The longest outage, on a ladder of half retry periods (at least 125 ms) around the guaranteed one,
 * that every trial at that length survived; and the shortest length that lost the master.
 */
async function longestOutage(ctx: Ctx, t: LeaseTimings, mode: RelayMode) {
  const relay = await ApiRelay.start(ctx.cp.kubeconfigPath);
  const lease = `outage-${mode}-${t.leaseDurationMs}-${t.renewDeadlineMs}-${t.retryPeriodMs}`;
  const l = await leader(ctx, lease, t, relay.kubeconfigThrough(ctx.cp.kubeconfigPath, ctx.logDir));
  const step = Math.max(125, t.retryPeriodMs / 2);
  const trial = async (length: number) => {
    let kept = true;
    for (let i = 0; i < trialsPerLength && kept; i++) kept = await survives(l, relay, mode, length, t);
    console.log(`  ${mode} outage of ${length} ms: ${kept ? 'survived' : 'lost the master'}`);
    return kept;
  };
  try {
    await ready(l);
    let length = Math.max(step, Math.floor((guaranteedOutageMs(t) - step) / step) * step);
    // Down from the start until a length is survived, then up until one is lost (once is enough).
    let lost: number | undefined;
    while (length > step && !(await trial(length))) {
      lost = length;
      length -= step;
    }
    let longest = length;
    for (length += step; length !== lost && (await trial(length)); length += step) longest = length;
    return { longestSurvivedMs: longest, firstLostMs: length, trialsPerLength };
  } finally {
    await l.process.stop();
    await relay.close();
  }
}

export async function measureTimings(runs: number) {
  const logDir = mkdtempSync(join(tmpdir(), 'kvpool-bench-timings-'));
  const cp = await ControlPlane.start();
  process.env.KVPOOL_TEST_KUBECONFIG = cp.kubeconfigPath;
  const client = await KubeClient.fromKubeconfigFile(cp.kubeconfigPath);
  const ctx: Ctx = { cp, client, logDir, leaders: [] };
  const rows = [];
  const loadAtStart = loadavg()[0];
  try {
    await client.apply(
      { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } },
      { fieldManager: 'bench' },
    );
    for (const t of consideredTimings) {
      console.log(`timing ${t.leaseDurationMs}/${t.renewDeadlineMs}/${t.retryPeriodMs} ms`);
      rows.push({
        leaseDuration: `${t.leaseDurationMs / 1000}s`,
        renewDeadline: `${t.renewDeadlineMs}ms`,
        retryPeriod: `${t.retryPeriodMs}ms`,
        default: t === storeLeaseDefaults,
        guaranteedOutageMs: guaranteedOutageMs(t),
        hardKill: await hardKills(ctx, t, runs),
        outage: {
          refused: await longestOutage(ctx, t, 'refuse'),
          hanging: await longestOutage(ctx, t, 'hang'),
        },
      });
    }
  } finally {
    for (const l of ctx.leaders) await l.process.stop();
    await client.close();
    await cp.stop();
    rmSync(logDir, { recursive: true, force: true });
  }
  return {
    // The machine is shared: its 1-minute load average at either end says how busy it was.
    loadAverage: { atStart: loadAtStart, atEnd: loadavg()[0], cores: availableParallelism() },
    how: 'kvpool-store leaders as processes against a real apiserver and the wheel’s mooncake_master (no kubelet, Service or operator in the path). Hard kill: SIGKILL of the leader’s process group with a standby waiting, until the standby holds the Lease, and until its /readyz answers 200. Outage: a TCP relay between the leader and the apiserver refuses connections, or holds every byte (hang), for the given length at a random phase; survived means the same mooncake_master process still serves as the Lease holder afterwards. Lengths climb in steps of half a retry period (at least 125 ms).',
    rows,
  };
}
