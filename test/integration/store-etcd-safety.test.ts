// Replicated metadata must never hand out bytes that are not the key's (decision 50). Each case makes a
// master change where it could go wrong, as real processes (a TLS etcd of three, kvpool-store leader
// replicas with the wheel's masters, members, the real client), then reads every key written: each
// reads back with its own bytes or misses. Every object's bytes begin with its key, so another key's
// object, or an empty segment's zeros, cannot pass for it.
import assert from 'node:assert/strict';
import { after, before, describe, it, type TestContext } from 'node:test';
import { EtcdStore } from '../support/etcd-store.ts';
import { masterMetric, masterPid, probe, type StoreLeader } from '../support/store-program.ts';
import { waitFor } from '../support/wait.ts';
import { type Hit, WarmClient, type WarmClientOptions } from '../support/warm-client.ts';

const KiB = 1024;
const net = `127.67.${100 + (process.pid % 150)}`;
let store: EtcdStore;
let clientHost = 40;

before(async () => {
  store = await EtcdStore.start({ net, leaders: 2, members: 2, segmentBytes: 64 << 20 });
});

after(async () => {
  await store?.stop();
});

function client(options: Omit<WarmClientOptions, 'host' | 'setupUntil' | 'master'> & { master?: string }) {
  clientHost += 1;
  return new WarmClient({
    ...options,
    master: options.master ?? store.proxy.address,
    host: `${net}.${clientHost}`,
    setupUntil: Date.now() + 30_000,
  });
}

const keysOf = (prefix: string, count: number) =>
  Array.from({ length: count }, (_, i) => `${prefix}-${String(i).padStart(4, '0')}`);

/**
 * Reads `keys` through a new client once a master serves again, for up to `ms` (a key it still misses
 * then is taken as lost); the hits.
 */
async function readBack(keys: string[], ms = 8_000): Promise<Hit[]> {
  await store.waitServing();
  const reader = client({ size: 32 * KiB });
  try {
    await reader.next('setup', 30_000);
    reader.poll(keys, Date.now() + ms);
    await reader.next('done', ms + 20_000);
    return reader.hits();
  } finally {
    await reader.stop();
  }
}

function noForeignBytes(t: TestContext, what: string, keys: string[], hits: Hit[]): void {
  const wrong = hits.filter((h) => !h.ok).map((h) => h.key);
  t.diagnostic(`${what}: ${hits.length} of ${keys.length} read back, ${wrong.length} with other bytes`);
  assert.deepEqual(wrong, [], `${what}: keys that read back with bytes not their own`);
}

async function writeAll(prefix: string, count: number): Promise<string[]> {
  const writer = client({ size: 32 * KiB, put: { prefix, count } });
  try {
    const written = await writer.next('written', 120_000);
    assert.equal(written.ok, count, `puts that failed: ${written.failed?.join(', ')}`);
  } finally {
    await writer.stop();
  }
  return keysOf(prefix, count);
}

async function standbyOf(serving: StoreLeader): Promise<StoreLeader> {
  const standby = store.leaders.find((l) => l !== serving && l.process.running);
  assert.ok(standby, 'a standby runs');
  return standby;
}

/** Waits until the standby has applied at least `seq` OpLog entries. */
async function caughtUp(standby: StoreLeader, seq: number): Promise<void> {
  await waitFor(() => masterMetric(standby, 'ha_oplog_applied_sequence_id'), {
    what: `the standby's OpLog at ${seq}`,
    until: (n) => n >= seq,
    timeoutMs: 20_000,
  });
}

async function appliedOn(standby: StoreLeader): Promise<number> {
  return (await masterMetric(standby, 'ha_oplog_applied_sequence_id')) ?? 0;
}

/** After a case: two leader replicas and two members again, the store serving. */
async function restore(): Promise<void> {
  while (store.leaders.filter((l) => l.process.running).length < 2) await store.addLeader();
  while (store.members.filter((m) => m.process.running).length < 2) await store.addMember();
  await store.waitServing();
  await store.waitMounted(2);
}

describe('replicated metadata never serves another key’s bytes', () => {
  it('a member restarted (new process, empty segment) while the master changes', async (t) => {
    const keys = await writeAll('restarted', 100);
    const serving = (await store.waitServing())!;
    const standby = await standbyOf(serving);
    await caughtUp(standby, await appliedOn(standby));
    const member = store.members.find((m) => m.process.running)!;
    await Promise.all([store.killMember(member), store.killLeader(serving)]);
    await store.addMember(member.pod);
    noForeignBytes(t, 'restarted member', keys, await readBack(keys));
    await restore();
  });

  it('a member lost for good', async (t) => {
    const keys = await writeAll('lost', 100);
    const serving = (await store.waitServing())!;
    const lost = store.members.find((m) => m.process.running)!;
    await Promise.all([store.killMember(lost), store.killLeader(serving)]);
    const hits = await readBack(keys);
    noForeignBytes(t, 'member lost', keys, hits);
    assert.ok(hits.length > 0, "the surviving member's keys read back");
    await restore();
  });

  it('a failover in the middle of puts', async (t) => {
    const writer = client({
      size: 32 * KiB,
      put: { prefix: 'midput', count: 300, intervalMs: 10, eachPut: true },
    });
    try {
      await waitFor(() => (writer.acknowledged().length >= 100 ? true : undefined), {
        what: '100 puts acknowledged',
        timeoutMs: 60_000,
      });
      await store.killLeader((await store.serving())!);
      await writer.next('written', 180_000);
    } finally {
      await writer.stop();
    }
    const acked = writer.acknowledged();
    const hits = await readBack(acked);
    noForeignBytes(t, 'failover mid-puts (acknowledged puts)', acked, hits);
    await restore();
  });

  it('a standby lagging behind the OpLog when the primary dies', async (t) => {
    const serving = (await store.waitServing())!;
    const standby = await standbyOf(serving);
    const pid = masterPid(standby);
    assert.ok(pid, "the standby's master runs");
    process.kill(pid, 'SIGSTOP');
    let keys: string[];
    try {
      keys = await writeAll('lagging', 100);
    } finally {
      process.kill(pid, 'SIGCONT');
    }
    // The primary dies at once: the standby has applied nothing of the last 100 puts yet.
    await store.killLeader(serving);
    const hits = await readBack(keys);
    noForeignBytes(t, 'lagging standby', keys, hits);
    t.diagnostic(`lagging standby: ${hits.length} of 100 read back`);
    await restore();
  });

  it('two masters that both believe they serve (the primary cut off from etcd)', async (t) => {
    // A primary that reaches etcd through relays the test cuts: the others take over after its etcd
    // lease runs out, while it may still answer the clients connected to it.
    for (const l of store.leaders.filter((x) => x.process.running)) await store.killLeader(l);
    const cut = await store.addLeader(true);
    await waitFor(() => probe(cut, '/readyz'), {
      what: 'the cuttable leader serving',
      until: (v) => v.status === 200,
    });
    await store.addLeader();
    await store.waitMounted(2);
    const before = await writeAll('split-before', 50);
    const direct = client({
      master: `${cut.pod.ip}:${cut.rpcPort}`,
      size: 32 * KiB,
      put: { prefix: 'split-old', count: 1000, intervalMs: 20, eachPut: true },
    });
    let afterKeys: string[] = [];
    try {
      await waitFor(() => (direct.acknowledged().length >= 20 ? true : undefined), {
        what: 'puts on the old primary',
        timeoutMs: 60_000,
      });
      for (const r of cut.etcdRelays!) r.cut();
      const next = await waitFor(
        async () => ((await store.serving())?.pod.ip !== cut.pod.ip ? store.serving() : undefined),
        { what: 'another master serving', timeoutMs: 60_000 },
      );
      t.diagnostic(`new primary ${next?.pod.ip}; old primary ready: ${(await probe(cut, '/readyz')).status}`);
      await store.waitMounted(2);
      afterKeys = await writeAll('split-new', 50);
    } finally {
      // Its master is gone (killed once demoted); what it acknowledged before is what counts.
      await direct.stop();
    }
    const keys = [...before, ...direct.acknowledged(), ...afterKeys];
    const hits = await readBack(keys);
    noForeignBytes(t, 'split brain', keys, hits);
    const got = new Set(hits.map((h) => h.key));
    assert.ok(
      [...before, ...afterKeys].every((k) => got.has(k)),
      'every key written through the serving master reads back',
    );
    await store.killLeader(cut);
    await restore();
  });
});
