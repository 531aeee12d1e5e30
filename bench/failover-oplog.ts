// The failover bench's replicated-metadata part (decision 50), on real processes: a TLS etcd of three,
// two kvpool-store leader replicas (--election=Etcd) with the wheel's masters, two members, the real
// client. What comes back of the objects in memory after a SIGKILL of the serving master, with the OpLog
// and (the anchor, same run) with Mooncake's etcd HA alone; the puts' latency with and without it; what
// a rolling upgrade keeps (every leader replaced through a handover, then every member drained and
// replaced, as the operator does it); and etcd's size per million keys.

import { MemberDrains } from '../src/controllers/backend/member-drain.ts';
import { parseSegments } from '../src/store/observe.ts';
import { parsePrometheusText } from '../src/store/prometheus.ts';
import { EtcdStore } from '../test/support/etcd-store.ts';
import { masterMetric, type StoreLeader } from '../test/support/store-program.ts';
import { waitFor } from '../test/support/wait.ts';
import { WarmClient } from '../test/support/warm-client.ts';
import { median, round, spread } from './results.ts';

export const oplogObjects = 200;
export const oplogObjectBytes = 128 * 1024;
const segmentBytes = 256 << 20;
let net = 70;
const keys = (prefix: string) =>
  Array.from({ length: oplogObjects }, (_, i) => `${prefix}-${String(i).padStart(4, '0')}`);

async function startStore(oplog: boolean): Promise<EtcdStore> {
  net += 1;
  return EtcdStore.start({ net: `127.68.${net}`, leaders: 2, members: 2, segmentBytes, oplog });
}

/** Writes the objects, timing each put; the client stays for the read after the failover. */
async function write(store: EtcdStore, prefix: string): Promise<WarmClient> {
  const client = new WarmClient({
    master: store.proxy.address,
    host: `${store.options.net}.45`,
    size: oplogObjectBytes,
    put: { prefix, count: oplogObjects, eachPut: true },
    setupUntil: Date.now() + 30_000,
  });
  const written = await client.next('written', 180_000);
  if (written.ok !== oplogObjects) throw new Error(`${oplogObjects - Number(written.ok)} puts failed`);
  return client;
}

export interface WarmRun {
  keysBefore: number;
  keysReadBack: number;
  identical: number;
  firstHitSeconds?: number;
  allBackSeconds?: number;
  /** From the kill to the first serving master (its readiness). */
  servingSeconds?: number;
}

/**
 * Waits until every standby has applied the OpLog's last entry and held there for a second: the puts
 * a primary acknowledged within its last OpLog write before a kill are lost with it (the OpLog is
 * written in batches, after the puts answer); the failover is measured on what it had written.
 */
async function caughtUp(store: EtcdStore): Promise<void> {
  const serving = (await store.serving())!;
  let last = { seq: -1, since: Date.now() };
  await waitFor(
    async () => {
      const standbys = store.leaders.filter((l) => l !== serving && l.process.running);
      const seqs = await Promise.all(standbys.map((l) => masterMetric(l, 'ha_oplog_applied_sequence_id')));
      const seq = Math.min(...seqs.map((x) => x ?? -1));
      if (seq !== last.seq) last = { seq, since: Date.now() };
      return seq >= 0 && Date.now() - last.since >= 1000 ? true : undefined;
    },
    { what: 'the standbys caught up with the OpLog', timeoutMs: 60_000, intervalMs: 200 },
  );
}

/** One SIGKILL of the serving master, and what a client kept alive across it reads back within 60 s. */
async function killAndRead(store: EtcdStore, client: WarmClient, prefix: string): Promise<WarmRun> {
  const serving = (await store.serving())!;
  const killedAt = Date.now();
  await store.killLeader(serving);
  client.poll(keys(prefix), killedAt + 60_000);
  const servingAt = await store
    .waitServing(60_000)
    .then(() => Date.now())
    .catch(() => undefined);
  await client.next('done', 90_000);
  const hits = client.hits();
  const ok = hits.filter((h) => h.ok);
  const secs = (at: number | undefined) => (at === undefined ? undefined : round((at - killedAt) / 1000, 1));
  return {
    keysBefore: oplogObjects,
    keysReadBack: hits.length,
    identical: ok.length,
    ...(ok.length ? { firstHitSeconds: secs(Math.min(...ok.map((h) => h.at))) } : {}),
    ...(ok.length === oplogObjects ? { allBackSeconds: secs(Math.max(...ok.map((h) => h.at))) } : {}),
    ...(servingAt ? { servingSeconds: secs(servingAt) } : {}),
  };
}

/** etcd's database size in use, from a member's metrics (bytes). */
async function etcdBytesInUse(store: EtcdStore): Promise<number | undefined> {
  const m = store.etcd.members[0]!;
  const text = await (await fetch(`http://${m.ip}:${m.metricsPort}/metrics`)).text();
  return parsePrometheusText(text).get('etcd_mvcc_db_total_size_in_use_in_bytes')?.[0]?.value;
}

/**
 * A rolling upgrade as the operator runs it: each old leader asked to hand over once a new one follows
 * (POST /step-down), then each member's segment drained through the master before the member is
 * replaced by a new process.
 */
async function rollingUpgrade(store: EtcdStore): Promise<void> {
  const old = store.leaders.filter((l) => l.process.running);
  for (let i = 0; i < old.length; i++) await store.addLeader();
  for (const l of old) {
    await fetch(`${l.probeUrl}/step-down`, { method: 'POST' });
    await waitFor(() => store.serving(), {
      what: 'a new leader serving',
      until: (s: StoreLeader) => !old.includes(s),
      timeoutMs: 60_000,
    }).catch(() => undefined);
    await store.killLeader(l);
  }
  const drains = new MemberDrains();
  for (const member of store.members.filter((m) => m.process.running)) {
    const serving = (await store.waitServing())!;
    const admin = new URL(serving.adminUrl).host;
    await waitFor(
      async () => {
        const listing = parseSegments(await (await fetch(`${serving.adminUrl}/get_segments_detail`)).text());
        const mine = listing.filter((s) => (s.segmentName ?? '').startsWith(`${member.pod.ip}:`));
        const verdict = await drains.drain(admin, member.pod.name, mine, true);
        return verdict.done ? true : undefined;
      },
      { what: `the drain of ${member.pod.ip}`, timeoutMs: 15 * 60_000, intervalMs: 1000 },
    );
    await store.killMember(member);
    await store.addMember(member.pod);
    await store.waitMounted(2);
  }
}

export async function measureOplog(runs: number) {
  const withOplog: WarmRun[] = [];
  const withoutOplog: WarmRun[] = [];
  const putMs = { oplog: [] as number[], noOplog: [] as number[] };
  let etcdBytesPerKey: number | undefined;
  for (let run = 0; run < runs; run++) {
    for (const oplog of [true, false]) {
      const store = await startStore(oplog);
      try {
        const before = oplog ? await etcdBytesInUse(store) : undefined;
        const prefix = `run${run}`;
        const client = await write(store, prefix);
        (oplog ? putMs.oplog : putMs.noOplog).push(...client.putLatencies());
        if (oplog && before !== undefined && run === 0) {
          await new Promise((r) => setTimeout(r, 2000));
          const after = await etcdBytesInUse(store);
          if (after !== undefined) etcdBytesPerKey = Math.max(0, (after - before) / oplogObjects);
        }
        if (oplog) await caughtUp(store);
        const result = await killAndRead(store, client, prefix);
        await client.stop();
        (oplog ? withOplog : withoutOplog).push(result);
        console.log(`oplog=${oplog} run ${run + 1}: ${JSON.stringify(result)}`);
      } finally {
        await store.stop();
      }
    }
  }
  const upgradeStore = await startStore(true);
  let upgrade: { keysBefore: number; keysReadBack: number; identical: number; seconds: number };
  try {
    const client = await write(upgradeStore, 'upgrade');
    await caughtUp(upgradeStore);
    const started = Date.now();
    await rollingUpgrade(upgradeStore);
    const seconds = round((Date.now() - started) / 1000, 1);
    client.poll(keys('upgrade'), Date.now() + 30_000);
    await client.next('done', 60_000);
    const hits = client.hits();
    upgrade = {
      keysBefore: oplogObjects,
      keysReadBack: hits.length,
      identical: hits.filter((h) => h.ok).length,
      seconds,
    };
    await client.stop();
  } finally {
    await upgradeStore.stop();
  }
  const medianOf = (rs: WarmRun[], k: keyof WarmRun) => {
    const v = rs.map((r) => r[k]).filter((x): x is number => x !== undefined);
    return v.length ? median(v) : undefined;
  };
  const oplog = spread(putMs.oplog);
  const plain = spread(putMs.noOplog);
  return {
    dramWarm: {
      keysBefore: oplogObjects,
      keysReadBack: medianOf(withOplog, 'keysReadBack'),
      identical: medianOf(withOplog, 'identical'),
      firstHitSeconds: medianOf(withOplog, 'firstHitSeconds'),
      allBackSeconds: medianOf(withOplog, 'allBackSeconds'),
      servingSeconds: medianOf(withOplog, 'servingSeconds'),
      runs: withOplog,
    },
    anchor: {
      note: "Mooncake's etcd HA without the OpLog, same machine, same run: a new master starts with an empty index",
      keysReadBack: medianOf(withoutOplog, 'keysReadBack'),
      servingSeconds: medianOf(withoutOplog, 'servingSeconds'),
      runs: withoutOplog,
    },
    upgrade,
    putLatencyMs: {
      oplog,
      noOplog: plain,
      p50Overhead: round(oplog.p50 / plain.p50 - 1, 3),
      p99Overhead: round(oplog.p99 / plain.p99 - 1, 3),
    },
    etcd: {
      bytesPerKey: etcdBytesPerKey === undefined ? undefined : round(etcdBytesPerKey, 1),
      bytesPerMillionKeys: etcdBytesPerKey === undefined ? undefined : Math.round(etcdBytesPerKey * 1e6),
      how: 'etcd_mvcc_db_total_size_in_use_in_bytes before and 2 s after the puts (the OpLog entries of one run), per object',
    },
    targets: { readBackFraction: 0.99, allBackSeconds: 20, upgradeLost: 0, putP50Overhead: 0.2 },
  };
}
