// A store with replicated metadata (electionBackend Etcd, decision 50), as real processes: a TLS etcd
// of three members, two kvpool-store leader replicas each running the wheel's master, two members, and
// the real client. The serving master is SIGKILLed; its standby has followed the OpLog and serves every
// key with its own bytes.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { EtcdStore } from '../support/etcd-store.ts';
import { masterMetric, probe } from '../support/store-program.ts';
import { waitFor } from '../support/wait.ts';
import { WarmClient } from '../support/warm-client.ts';

const MiB = 1 << 20;
const net = `127.66.${100 + (process.pid % 150)}`;
let store: EtcdStore;

before(async () => {
  store = await EtcdStore.start({ net, leaders: 2, members: 2, segmentBytes: 64 * MiB });
});

after(async () => {
  await store?.stop();
});

describe('a store whose masters keep their metadata in etcd', () => {
  it('runs every replica’s master: one serves, the other is a standby following the OpLog', async () => {
    const serving = await store.waitServing();
    const standby = store.leaders.find((l) => l !== serving)!;
    const verdict = await probe(standby, '/readyz');
    assert.equal(verdict.status, 503);
    assert.match(verdict.reason, /^standby: following the OpLog of .+ in etcd$/);
    assert.match((await probe(serving, '/readyz')).reason, /^master serving$/);
  });

  it('serves every key with its own bytes after the serving master is SIGKILLed', async () => {
    const client = new WarmClient({
      master: store.proxy.address,
      host: `${net}.40`,
      size: 128 * 1024,
      put: { prefix: 'warm', count: 200 },
      setupUntil: Date.now() + 30_000,
    });
    try {
      const written = await client.next('written', 120_000);
      assert.equal(written.ok, 200, `puts that failed: ${written.failed?.join(', ')}`);
      const serving = (await store.serving())!;
      const standby = store.leaders.find((l) => l !== serving && l.process.running)!;
      // The standby follows the OpLog: it has applied the puts' entries.
      await waitFor(() => masterMetric(standby, 'ha_oplog_applied_sequence_id'), {
        what: "the standby's applied OpLog sequence",
        until: (seq) => seq >= 200,
        timeoutMs: 10_000,
      });
      const killedAt = Date.now();
      await store.killLeader(serving);
      const keys = Array.from({ length: 200 }, (_, i) => `warm-${String(i).padStart(4, '0')}`);
      client.poll(keys, killedAt + 20_000);
      const done = await client.next('done', 40_000);
      const hits = client.hits();
      const wrong = hits.filter((h) => !h.ok);
      assert.deepEqual(wrong, [], 'a key read back with bytes that are not its own');
      assert.ok(hits.length >= 198, `${hits.length} of 200 read back within 20 s (${done.reason})`);
      const allBack = Math.max(...hits.map((h) => h.at)) - killedAt;
      assert.ok(allBack <= 20_000, `all back ${allBack} ms after the kill`);
      assert.equal((await store.serving())?.pod.ip, standby.pod.ip);
    } finally {
      await client.stop();
    }
  });
});
