// The warm part of the failover bench (decision 45): on the local cluster's real nodes, a backend with a
// write-through disk tier and a DRAM-only one, each written N objects through the real Mooncake client;
// the keys found in the tier's files are tier-resident; then both serving leaders' processes are
// SIGKILLed at once, and clients poll every written key until each tier-resident one read back with
// its bytes, or 60 s. The clients are set up before the kill and live through it, as an engine's would;
// if another leader Pod serves, a new client is set up against it (its setup time is in the figures).

import { execFileSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { availableParallelism, loadavg } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { LocalCluster } from '../local/cluster.ts';
import { waitFor } from '../src/kube/wait-for.ts';
import { parseQuantityBytes } from '../src/vocabulary/quantity.ts';
import { leaderRpcPort } from '../src/vocabulary/store-objects.ts';
import { WarmClient } from '../test/support/warm-client.ts';
import {
  backend,
  coldName,
  killPids,
  memberSize,
  metric,
  type Pod,
  type Registration,
  servingLeader,
  settled,
  tierKeys,
  tierPath,
  tierSize,
  warmName,
  watchRegistration,
} from './failover-warm-cluster.ts';
import { objectKey, warmRunFigures } from './failover-warm-figures.ts';

const MiB = 2 ** 20;
export const warmObjects = Number(process.env.BENCH_WARM_OBJECTS ?? 200);
export const warmObjectBytes = Number(process.env.BENCH_WARM_OBJECT_BYTES ?? MiB);
const pollMs = 60_000;
const budgetMs = Number(process.env.BENCH_WARM_BUDGET_MS ?? 7 * 60_000);

interface Side {
  name: string;
  keys: string[];
  clients: WarmClient[];
  /** When each client was started, ms after the kill; null for the one set up before it. */
  clientStartedAt: (number | null)[];
  killed: Pod;
  freshTried: boolean;
}

/** After the kill: a client for whichever leader serves, and once, a fresh one if none answered in 10 s. */
async function follow(cluster: LocalCluster, side: Side, t0: number, until: number) {
  const leader = await servingLeader(cluster, side.name).catch(() => undefined);
  const ip = leader?.status?.podIP;
  if (!ip) return;
  const live = side.clients.filter((c) => !c.exited && c.master.startsWith(`${ip}:`));
  const answered = side.clients.some((c) => (c.find('answered')?.at ?? 0) >= t0);
  const fresh = !answered && !side.freshTried && Date.now() - t0 >= 10_000;
  if (live.length && !fresh) return;
  if (live.length) side.freshTried = true;
  const c = new WarmClient({
    master: `${ip}:${leaderRpcPort}`,
    host: cluster.hostAddress,
    size: warmObjectBytes,
    setupUntil: until,
  });
  c.poll(side.keys, until);
  side.clients.push(c);
  side.clientStartedAt.push(Date.now() - t0);
  console.log(
    `  ${side.name}: a new client for ${leader.metadata.name} (${ip}) ${Date.now() - t0} ms after the kill`,
  );
}

function clientSummary(side: Side, t0: number) {
  return side.clients.map((c, i) => ({
    master: c.master,
    startedMsAfterKill: side.clientStartedAt[i] ?? null,
    answeredMs: (c.find('answered')?.at ?? 0) >= t0 ? c.find('answered')!.at - t0 : null,
    hits: c.hits().filter((h) => h.ok).length,
  }));
}

async function warmRun(cluster: LocalCluster, run: number, capacity: { warm: bigint; cold: bigint }) {
  const [warmLeader, coldLeader] = [
    await settled(cluster, warmName, capacity.warm),
    await settled(cluster, coldName, capacity.cold),
  ];
  const started = Date.now();
  const side = (name: string, prefix: string, killed: Pod): Side => ({
    name,
    keys: Array.from({ length: warmObjects }, (_, i) => objectKey(prefix, i)),
    clients: [
      new WarmClient({
        master: `${killed.status!.podIP!}:${leaderRpcPort}`,
        host: cluster.hostAddress,
        size: warmObjectBytes,
        put: { prefix, count: warmObjects },
        setupUntil: Date.now() + 60_000,
      }),
    ],
    clientStartedAt: [null],
    killed,
    freshTried: false,
  });
  const warm = side(warmName, `warm-r${run}`, warmLeader);
  const cold = side(coldName, `cold-r${run}`, coldLeader);
  try {
    const written = [
      await warm.clients[0]!.next('written', 300_000),
      await cold.clients[0]!.next('written', 300_000),
    ];
    console.log(
      `run ${run}: written ${written.map((w) => `${w.ok} (present ${w.present})`).join(' / ')} in ${Date.now() - started} ms`,
    );
    // The tier's files until the run's keys in them stop growing for 3 s (three offload heartbeats).
    const seen = new Map<string, number>();
    const resident = new Set<string>();
    let [count, stableSince] = [0, Date.now()];
    await waitFor(
      () => {
        tierKeys(cluster, `warm-r${run}`, started, seen, resident);
        if (resident.size !== count) [count, stableSince] = [resident.size, Date.now()];
        return count > 0 && Date.now() - stableSince >= 3000 ? true : undefined;
      },
      { what: 'the tier to settle', timeoutMs: 30_000, intervalMs: 500 },
    ).catch(() => undefined);
    const fileBytesAtKill = await metric(warmLeader.status!.podIP!, 'master_allocated_file_size_bytes');
    // Objects with a tier replica, every run's (the master's count, beside the files' keys of this run).
    const fileObjectsAtKill = await metric(warmLeader.status!.podIP!, 'file_cache_nums_');
    const pids = [...(await killPids(cluster, warmLeader)), ...(await killPids(cluster, coldLeader))];
    console.log(
      `run ${run}: ${resident.size} of ${warmObjects} keys on the tier (master file bytes ${fileBytesAtKill}); SIGKILL ${warmLeader.metadata.name} and ${coldLeader.metadata.name}`,
    );
    const t0 = Date.now();
    for (const pid of pids) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // Gone with its parent.
      }
    }
    const until = t0 + pollMs;
    warm.clients[0]!.poll(warm.keys, until);
    cold.clients[0]!.poll(cold.keys, until);
    let warmDone = false;
    const registration: Registration = { firstMs: null, allMs: null, lastBytes: null };
    for (;;) {
      await watchRegistration(cluster, warmName, t0, fileBytesAtKill, registration);
      const hit = new Set(
        warm.clients
          .flatMap((c) => c.hits())
          .filter((h) => h.ok && resident.has(h.key))
          .map((h) => h.key),
      );
      warmDone ||= hit.size === resident.size || Date.now() >= until;
      const coldAnswered = Math.min(
        ...cold.clients.map((c) => c.find('answered')?.at ?? Number.POSITIVE_INFINITY),
      );
      if (warmDone && (Date.now() >= until || Date.now() - coldAnswered >= 5000)) break;
      for (const s of [warm, cold]) await follow(cluster, s, t0, until);
      await sleep(250);
    }
    await Promise.all([...warm.clients, ...cold.clients].map((c) => c.stop()));
    const figures = warmRunFigures(
      t0,
      warm.keys,
      resident,
      warm.clients.flatMap((c) => c.hits()),
    );
    const coldHits = new Set(
      cold.clients
        .flatMap((c) => c.hits())
        .filter((h) => h.ok)
        .map((h) => h.key),
    ).size;
    const servedBy = async (name: string, killed: Pod) => {
      const now = await waitFor(() => servingLeader(cluster, name), {
        what: `${name} serving`,
        timeoutMs: 30_000,
      }).catch(() => undefined);
      if (!now) return null;
      return now.metadata.name === killed.metadata.name ? 'the restarted leader' : 'a standby';
    };
    const result = {
      run,
      servedBy: await servedBy(warmName, warmLeader),
      coldServedBy: await servedBy(coldName, coldLeader),
      warm: {
        ...figures,
        masterFileBytesAtKill: fileBytesAtKill,
        masterFileObjectsAtKill: fileObjectsAtKill,
        // The new master's figure: every run's tier objects, not only this run's.
        masterFileBytesAfter: registration.lastBytes,
        killToFirstRegisteredMs: registration.firstMs,
        killToAllRegisteredMs: registration.allMs,
        putFailures: written[0]!.failed?.length ?? 0,
        clients: clientSummary(warm, t0),
      },
      cold: {
        written: cold.keys.length,
        hit: coldHits,
        fraction: coldHits / cold.keys.length,
        clients: clientSummary(cold, t0),
      },
    };
    console.log(`run ${run}: ${JSON.stringify(result)}`);
    for (const c of [...warm.clients, ...cold.clients])
      if (!c.hits().length && c.exitCode) console.log(`  client ${c.master} stderr: ${c.tail()}`);
    return result;
  } finally {
    await Promise.all([...warm.clients, ...cold.clients].map((c) => c.stop()));
  }
}

/** Starts from a running cluster; creates both backends, runs `runs` kills, and leaves them in place. */
export async function measureWarmFailover(cluster: LocalCluster, runs: number) {
  const started = Date.now();
  const loadAtStart = loadavg();
  for (const node of cluster.nodes) {
    const dir = join(cluster.root, 'nodes', node, tierPath);
    mkdirSync(join(dir, '..'), { recursive: true });
    execFileSync('install', ['-d', '-o', '65532', '-g', '0', '-m', '0750', dir]);
  }
  await cluster.client.apply(backend(warmName, true), { fieldManager: 'bench' });
  await cluster.client.apply(backend(coldName, false), { fieldManager: 'bench' });
  const n = BigInt(cluster.nodes.length);
  const capacity = {
    warm: n * (parseQuantityBytes(memberSize) + parseQuantityBytes(tierSize)),
    cold: n * parseQuantityBytes(memberSize),
  };
  const results = [];
  // A run that fails ends the part; the runs before it keep their figures and the error is recorded.
  // The machine is shared: no run starts that the longest so far says would end past the budget.
  let failed: string | undefined;
  let longest = 0;
  for (let run = 1; run <= runs && !failed; run++) {
    if (run > 1 && Date.now() - started + longest > budgetMs) {
      console.log(`run ${run} not started: it would end past the part's budget of ${budgetMs} ms`);
      break;
    }
    const t = Date.now();
    try {
      results.push(await warmRun(cluster, run, capacity));
    } catch (err) {
      failed = `run ${run}: ${(err as Error).message}`;
      console.log(failed);
    }
    longest = Math.max(longest, Date.now() - t);
  }
  return {
    loadAverage: {
      atStart: loadAtStart.map((x) => Math.round(x * 100) / 100),
      atEnd: loadavg().map((x) => Math.round(x * 100) / 100),
      cores: availableParallelism(),
    },
    runsAsked: runs,
    results,
    ...(failed ? { failed } : {}),
  };
}
