// status.lastFailover over a real master (decision 45): two members with a write-through disk tier, as
// kvpool renders it (the master's -offload_on_evict=false, the members' 1 s offload heartbeat); objects
// written until some are on the tier; the master SIGKILLed and started again at the same address. The
// figures must count exactly the objects and bytes that were on the tier, which are exactly the keys
// that read back with their bytes: first the derivation alone, fed the master's /metrics every 200 ms;
// then the operator, writing the status of an external backend on such a store.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { LastFailover } from '../../src/api/kvcache-backend.ts';
import type { KVCacheBackend } from '../../src/api/types.ts';
import {
  advanceFailover,
  type FailoverMemory,
  warmSeconds,
} from '../../src/controllers/backend/status-failover.ts';
import { figureSamples } from '../../src/controllers/figure-metrics.ts';
import { failoverLine } from '../../src/kubectl-kvpool/failover-line.ts';
import { failoverNode } from '../../src/kubectl-kvpool/status-model.ts';
import { sightingOf } from '../../src/store/master-sighting.ts';
import { observeStore } from '../../src/store/observe.ts';
import { parseQuantityBytes } from '../../src/vocabulary/quantity.ts';
import { externalBackend } from '../builders/index.ts';
import { ensureNamespace } from '../support/cluster.ts';
import { type IsolatedCluster, startIsolatedCluster } from '../support/isolated-cluster.ts';
import { MooncakeStore } from '../support/mooncake-store.ts';
import { type InProcessOperator, startOperatorInProcess } from '../support/operator.ts';
import { runStoreClient } from '../support/store-client.ts';
import { waitFor } from '../support/wait.ts';

const MiB = 1 << 20;
const objectBytes = 256 * 1024;
const keys = Array.from({ length: 160 }, (_, i) => `block-${i}`);
const bytes = (i: number) => Buffer.from(Array.from({ length: objectBytes }, (_, j) => (i * 31 + j) % 251));

function startTierStore(): Promise<MooncakeStore> {
  return MooncakeStore.start({
    members: 2,
    memberBytes: 64 * MiB,
    offload: true,
    masterArgs: ['--offload_on_evict=false'],
    memberEnv: {
      MOONCAKE_OFFLOAD_TOTAL_SIZE_LIMIT_BYTES: String(1024 * MiB),
      MOONCAKE_OFFLOAD_HEARTBEAT_INTERVAL_SECONDS: '1',
    },
  });
}

/** The keys the master lists with a replica on a member's disk tier (its admin /batch_query_keys). */
async function tierKeys(store: MooncakeStore): Promise<string[]> {
  const res = await fetch(`${store.adminUrl}/batch_query_keys?keys=${keys.join(',')}`);
  const body = (await res.json()) as { data: Record<string, { local_disk_values?: unknown[] | null }> };
  return keys.filter((k) => (body.data[k]?.local_disk_values?.length ?? 0) > 0);
}

/** Writes every key, waits until the tier holds still for 3 s, and returns the keys on it. */
async function fillTier(store: MooncakeStore): Promise<string[]> {
  await waitFor(() => store.metric('master_total_file_capacity_bytes'), {
    what: 'both members’ tiers registered',
    timeoutMs: 30_000,
    until: (b) => b === 2048 * MiB,
  });
  const puts = await runStoreClient(
    { master: store.rpcAddress, host: '127.0.0.1' },
    keys.map((key, i) => ({ op: 'put' as const, key, data: bytes(i) })),
  );
  assert.ok(
    puts.every((p) => 'rc' in p && p.rc === 0),
    JSON.stringify(puts),
  );
  // The members write the tier in buckets on their 1 s heartbeat.
  let last: number | undefined;
  let since = Date.now();
  await waitFor(
    async () => {
      const n = await store.metric('file_cache_nums_');
      if (n !== last) [last, since] = [n, Date.now()];
      return n !== undefined && n > 0 && Date.now() - since >= 3000 ? n : undefined;
    },
    { what: 'objects on the tier, holding for 3 s', timeoutMs: 60_000, intervalMs: 250 },
  );
  const onTier = await tierKeys(store);
  const fileBytes = await store.metric('master_allocated_file_size_bytes');
  console.log(
    `written ${keys.length} objects (${(keys.length * objectBytes) / MiB} MiB); on the tier ${onTier.length} (${fileBytes} bytes)`,
  );
  assert.ok(onTier.length > 0, 'write-through put objects on the tier');
  assert.equal(await store.metric('file_cache_nums_'), onTier.length, 'file_cache_nums_ counts them');
  assert.equal(fileBytes, onTier.length * objectBytes, 'master_allocated_file_size_bytes sums them');
  return onTier;
}

/** The keys that read back; none may read back other bytes. */
async function readBack(store: MooncakeStore): Promise<string[]> {
  const results = await runStoreClient(
    { master: store.rpcAddress, host: '127.0.0.1' },
    keys.map((key) => ({ op: 'get' as const, key })),
  );
  const back = keys.filter((_, i) => {
    const r = results[i]!;
    return 'data' in r && r.data.length > 0;
  });
  const wrong = back.filter((k) => {
    const r = results[keys.indexOf(k)]!;
    return !('data' in r) || !r.data.equals(bytes(keys.indexOf(k)));
  });
  console.log(`read back ${back.length} of ${keys.length}, ${wrong.length} with other bytes`);
  assert.deepEqual(wrong, [], 'no key reads back other bytes');
  return back;
}

/** SIGKILLs the master and starts another at the same address; the time of the kill. */
async function killAndRestart(store: MooncakeStore): Promise<number> {
  await store.stopMaster('SIGKILL');
  const killed = Date.now();
  await store.startMaster();
  console.log(`new master serving ${Date.now() - killed} ms after the kill`);
  return killed;
}

/** What came back matches what was on the tier, object for object and byte for byte. */
function assertCounts(record: LastFailover, onTier: string[], killed: number): void {
  const warmFromKill = Date.parse(record.warmAt!) - killed;
  console.log(
    `lastFailover ${JSON.stringify(record)}; warm ${warmSeconds(record)} s after the new master was first read, ${warmFromKill} ms after the kill`,
  );
  assert.ok(Date.parse(record.at) >= killed, 'the failover is the new master’s, read after the kill');
  assert.equal(record.tierObjectsBefore, onTier.length);
  assert.equal(parseQuantityBytes(record.tierBytesBefore!), BigInt(onTier.length * objectBytes));
  assert.equal(record.reRegisteredObjects, onTier.length, 'every tier object re-registered');
  assert.equal(record.reRegisteredBytes, record.tierBytesBefore);
  assert.ok(warmFromKill < 15_000, `warm within 15 s of the kill: ${warmFromKill} ms`);
}

/** The operator's derivation, run on the master's /metrics every 200 ms; `record` is status.lastFailover. */
class Follower {
  record?: LastFailover;
  /** Readings taken so far. */
  reads = 0;
  private memory: FailoverMemory = {};
  private timer?: NodeJS.Timeout;
  private stopped = false;
  private readonly address: string;

  constructor(address: string) {
    this.address = address;
  }

  start(): void {
    const tick = async () => {
      const o = await observeStore(this.address, 1000);
      this.reads += 1;
      ({ record: this.record, memory: this.memory } = advanceFailover(
        this.record,
        this.memory,
        sightingOf(o),
        { tier: true },
      ));
      if (!this.stopped) this.timer = setTimeout(tick, 200);
    };
    void tick();
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
  }
}

describe('the failover derivation over a real master whose members have a write-through disk tier', () => {
  let store: MooncakeStore;
  let follower: Follower | undefined;
  before(async () => {
    store = await startTierStore();
  });
  after(async () => {
    follower?.stop();
    await store?.stop();
  });

  it('counts exactly the objects and bytes that were on the tier, which read back with their bytes', async () => {
    const onTier = await fillTier(store);
    follower = new Follower(store.adminAddress);
    follower.start();
    await waitFor(() => follower!.reads, {
      what: 'the follower read the first master',
      timeoutMs: 10_000,
      until: (n) => n >= 3,
    });
    assert.equal(follower.record, undefined, 'no failover while the first master serves');
    const killed = await killAndRestart(store);
    const record = await waitFor(() => follower!.record, {
      what: 'lastFailover warm',
      timeoutMs: 45_000,
      until: (r) => r.warmAt !== undefined,
    });
    assertCounts(record, onTier, killed);
    const back = await readBack(store);
    assert.deepEqual(back.sort(), [...onTier].sort(), 'exactly the tier’s keys read back');
    assert.equal(back.length, record.reRegisteredObjects, 'the figure counts what reads back');
  });
});

describe('the operator’s status.lastFailover for an external backend on such a store', () => {
  const ref = { apiVersion: 'worker.gpustack.ai/v1', kind: 'KVCacheBackend', name: 'tier-store' };
  let cluster: IsolatedCluster;
  let store: MooncakeStore;
  let operator: InProcessOperator;
  const get = () => cluster.client.get<KVCacheBackend>(ref);

  before(async () => {
    [cluster, store] = await Promise.all([startIsolatedCluster(), startTierStore()]);
    await ensureNamespace(cluster.client, 'gpustack-system');
    operator = await startOperatorInProcess(cluster.cp.kubeconfigPath);
    await cluster.client.create(externalBackend(ref.name, store));
  });
  after(async () => {
    await operator?.stop();
    await store?.stop();
    await cluster?.stop();
  });

  it('records the restarted master, what its members re-registered and when it was warm; metrics and plugin read it', async () => {
    const onTier = await fillTier(store);
    const ready = await waitFor(get, {
      what: 'Ready with the tier’s bytes in use',
      timeoutMs: 15_000,
      until: (b) =>
        b.status?.phase === 'Ready' &&
        parseQuantityBytes(b.status.capacity?.used ?? '0') >= BigInt(onTier.length * objectBytes),
    });
    assert.equal(ready.status?.lastFailover, undefined, 'no failover before the kill');
    const killed = await killAndRestart(store);
    const b = await waitFor(get, {
      what: 'status.lastFailover warm',
      timeoutMs: 45_000,
      intervalMs: 200,
      until: (x) => x.status?.lastFailover?.warmAt !== undefined,
    });
    const record = b.status!.lastFailover!;
    assert.equal(record.master, store.adminAddress);
    assertCounts(record, onTier, killed);
    const sample = (metric: string) =>
      figureSamples({ backends: [b], pools: [], bindings: [] }).find((s) => s.metric === metric)?.value;
    assert.equal(sample('kvpool_backend_failover_reregistered_objects'), onTier.length);
    assert.equal(sample('kvpool_backend_failover_reregistered_bytes'), onTier.length * objectBytes);
    assert.equal(sample('kvpool_backend_failover_warm_seconds'), warmSeconds(record));
    console.log(`kubectl kvpool status: ${failoverLine(failoverNode(record)!)}`);
    const back = await readBack(store);
    assert.deepEqual(back.sort(), [...onTier].sort(), 'exactly the tier’s keys read back');
  });
});
