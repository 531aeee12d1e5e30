// A full tier disk, with real store processes (decision 39). The master and one member run as kvpool
// renders them for a write-through tier (`tierEnv`: a declared 1Gi, the store's own eviction), the
// member under `kvpool-store member --tier-status-port`, its tier directory on a 320 MiB tmpfs.
// Another file fills the filesystem before the store wrote a bucket (so it has none of its own to
// evict), then objects are written until the store fails a tier write. Nothing may be lost: every put
// lands, every object reads back with its bytes, the member keeps running; once the other file is gone
// the store's next buckets land on the tier and come back byte for byte after the master is SIGKILLed
// and started again. The operator's read of the member (GET /tier) and its TierWritable decision must
// say so: NoRoom as soon as the filesystem is full, WriteFailed naming the node once the store fails a
// write, as many failures as the member's log holds FILE_WRITE_FAIL lines; the doctor finds it.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statfsSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { BackendCondition, BackendReason } from '../../src/api/kvcache-backend-conditions.ts';
import type { KVCacheBackend } from '../../src/api/types.ts';
import { tierEnv } from '../../src/controllers/backend/render-tier.ts';
import { decideTierWritable } from '../../src/controllers/backend/tier-health.ts';
import { tierFull } from '../../src/kubectl-kvpool/doctor-tier.ts';
import type { Snapshot } from '../../src/kubectl-kvpool/snapshot.ts';
import { readMemberTier, type TierReport } from '../../src/store/member-tier.ts';
import { MooncakeStore } from '../support/mooncake-store.ts';
import { isMountPoint, mountTmpfs, unmount } from '../support/small-filesystem.ts';
import { runStoreClient } from '../support/store-client.ts';
import { type StoreMember, startStoreMember } from '../support/store-program.ts';
import { keysOnTier, sha256, type Written } from '../support/tier-files.ts';
import { waitFor } from '../support/wait.ts';

const MiB = 1 << 20;
const objectBytes = 256 * 1024;
const filesystemBytes = 320 * MiB;
const segmentBytes = 128 * MiB;
const tierStatusPort = 9110;
const node = 'node-a';
/** Objects written after the filesystem is full, batch by batch, until the store fails a tier write. */
const batches = [64, 16, 4, 1, 64, 8, 2, 32, 4, 1];
const key = (i: number) => `block-${String(i).padStart(4, '0')}`;
const bytes = (i: number) => Buffer.from(Array.from({ length: objectBytes }, (_, j) => (i * 31 + j) % 251));

describe('a full tier disk under real store processes', () => {
  let store: MooncakeStore;
  let member: StoreMember;
  let passed = false;
  const dir = mkdtempSync(join(tmpdir(), 'kvpool-tier-full-'));
  const filesystem = join(dir, 'fs');
  const tier = join(filesystem, 'tier');
  const logDir = mkdtempSync(join(tmpdir(), 'kvpool-tier-full-logs-'));
  const ip = `127.61.${100 + (process.pid % 150)}.1`;
  const written = new Map<string, Written>();
  let count = 0;

  const client = () => ({ master: store.rpcAddress, host: '127.0.0.1' });
  const read = () => readMemberTier(`${ip}:${tierStatusPort}`);
  const report = async (): Promise<TierReport> => {
    const r = await read();
    assert.ok(r.ok, r.ok ? '' : r.message);
    return r.value;
  };
  const decide = async () =>
    decideTierWritable([{ pod: 'member-a', node, group: 0, reading: await read() }], new Date());
  /** Puts `n` more objects; how many puts did not land. */
  const put = async (n: number) => {
    const ops = Array.from({ length: n }, (_, k) => ({
      op: 'put' as const,
      key: key(count + k),
      data: bytes(count + k),
    }));
    count += n;
    const results = await runStoreClient(client(), ops);
    for (const o of ops) written.set(o.key, { size: o.data.length, sha: sha256(o.data) });
    return results.filter((r) => !('rc' in r) || r.rc !== 0).length;
  };
  const get = async (keys: string[]) => {
    const results = await runStoreClient(
      client(),
      keys.map((k) => ({ op: 'get' as const, key: k })),
    );
    return keys.filter((k, i) => {
      const r = results[i]!;
      return !('data' in r) || sha256(r.data) !== written.get(k)!.sha || r.data.length !== objectBytes;
    });
  };
  const figures = async () => ({
    keys: await store.metric('master_key_count'),
    fileObjects: await store.metric('file_cache_nums_'),
    fileBytes: await store.metric('master_allocated_file_size_bytes'),
    fileCapacity: await store.metric('master_total_file_capacity_bytes'),
    putStartFailures: await store.metric('master_put_start_failures_total'),
    putEndFailures: await store.metric('master_put_end_failures_total'),
  });
  const free = () => {
    const s = statfsSync(tier);
    return Number(s.bavail) * s.bsize;
  };
  const logged = () =>
    readFileSync(member.process.logFile, 'utf8')
      .split('\n')
      .filter((l) => l.includes('FILE_WRITE_FAIL')).length;

  before(async () => {
    mkdirSync(filesystem);
    mountTmpfs(filesystem, filesystemBytes);
    mkdirSync(tier);
    store = await MooncakeStore.start({
      members: 0,
      memberBytes: 0,
      offload: true,
      masterArgs: ['--offload_on_evict=false'],
    });
    const env = Object.fromEntries(
      tierEnv({ path: tier, capacity: '1Gi', offload: 'WriteThrough' }).map((e) => [e.name, e.value!]),
    );
    member = await startStoreMember({
      pod: { name: 'member-a', namespace: 'tier-full', ip },
      master: store.rpcAddress,
      segmentBytes,
      logDir,
      flags: [`--tier-status-port=${tierStatusPort}`],
      env,
    });
    await store.waitForCapacity(segmentBytes);
  });
  after(async () => {
    await member?.process.stop();
    await store?.stop();
    if (isMountPoint(filesystem)) unmount(filesystem);
    rmSync(dir, { recursive: true, force: true });
    if (passed) rmSync(logDir, { recursive: true, force: true });
    else console.log(`member log kept: ${member?.process.logFile}`);
  });

  it('loses nothing, keeps the member running, and TierWritable names the node: NoRoom, then WriteFailed', async () => {
    console.log(`start: ${JSON.stringify(await report())}; master ${JSON.stringify(await figures())}`);
    assert.equal((await decide())?.reason, BackendReason.Writable, 'an empty 320 MiB tier has room');

    // Filled by another file before the store wrote a bucket: it has none of its own to evict.
    writeFileSync(join(filesystem, 'other'), Buffer.alloc(free() - 64 * 1024));
    const room = await decide();
    console.log(
      `filled by another file, ${free()} bytes free: TierWritable=${room?.status} (${room?.reason}): ${room?.message}`,
    );
    assert.equal(room?.reason, BackendReason.NoRoom);
    assert.match(room!.message, /node-a \(64Ki free of 320Mi at /);

    let failures = 0;
    for (const n of batches) {
      assert.equal(await put(n), 0, `every put of ${n} more landed (the client hears of no failure)`);
      const started = Date.now();
      while (Date.now() - started < 6000 && failures === 0) {
        failures = (await report()).writeFailures;
        await new Promise((r) => setTimeout(r, 250));
      }
      console.log(
        `after ${count} objects: ${failures} FILE_WRITE_FAIL, ${free()} bytes free, ${keysOnTier(tier, written, 'block-').size} objects in the tier's files; master ${JSON.stringify(await figures())}`,
      );
      if (failures > 0) break;
    }
    assert.ok(
      failures > 0,
      `the store failed a tier write within ${count} objects (log: ${member.process.logFile})`,
    );

    // The member mounts its tier with the master on its first offload heartbeat: from then on the master
    // reports the declared capacity, whatever the filesystem holds.
    await waitFor(async () => (await figures()).fileCapacity, {
      what: 'the master to report the declared 1Gi, not the 320 MiB disk',
      timeoutMs: 30_000,
      until: (c) => c === 1024 * MiB,
    });
    const before = (await report()).writeFailures;
    const lines = logged();
    const now = (await report()).writeFailures;
    assert.ok(
      before <= lines && lines <= now,
      `${before} ≤ ${lines} FILE_WRITE_FAIL lines in the log ≤ ${now}`,
    );
    const c = await decide();
    console.log(`TierWritable=${c?.status} (${c?.reason}): ${c?.message}`);
    assert.deepEqual(
      [c?.type, c?.status, c?.reason],
      [BackendCondition.TierWritable, 'False', BackendReason.WriteFailed],
    );
    assert.match(c!.message, /on node-a \(\d+ FILE_WRITE_FAIL lines, the last at .*FILE_WRITE_FAIL/);
    assert.match(c!.message, /members\[0\]\.localDisks\[0\]\.capacity/);
    const backend = {
      metadata: { name: 'tiered' },
      spec: { connection: { managed: { members: [] } } },
      status: { conditions: [{ ...c!, lastTransitionTime: new Date().toISOString() }] },
    } as unknown as KVCacheBackend;
    const [finding] = tierFull.run({ backends: [backend] } as unknown as Snapshot);
    assert.equal(finding?.severity, 'error', 'kubectl kvpool doctor reports it as an error');

    assert.ok(member.process.running, 'the member keeps running');
    const wrong = await get([...written.keys()]);
    console.log(`read back ${written.size - wrong.length} of ${written.size} objects with their bytes`);
    assert.deepEqual(wrong, [], 'every object reads back with its bytes');
    assert.equal(keysOnTier(tier, written, 'block-').size, 0, 'no object reached the full tier');

    // Room again: the store's next buckets land on the tier, and come back after a master's restart.
    rmSync(join(filesystem, 'other'));
    assert.equal(await put(64), 0, 'every put of 64 more landed');
    const onTier = await waitFor(
      () => {
        const found = keysOnTier(tier, written, 'block-');
        return found.size > 0 ? found : undefined;
      },
      { what: 'a bucket on the tier once it has room', timeoutMs: 60_000, intervalMs: 500 },
    );
    console.log(`room again: ${onTier.size} objects on the tier; master ${JSON.stringify(await figures())}`);
    await store.stopMaster('SIGKILL');
    await store.startMaster();
    await waitFor(() => store.metric('file_cache_nums_'), {
      what: 'the tier’s objects registered again with the new master',
      timeoutMs: 60_000,
      until: (n) => n >= onTier.size,
    });
    const lost = await get([...onTier]);
    console.log(
      `after the master's restart: ${onTier.size - lost.length} of ${onTier.size} tier objects read back from the tier; master ${JSON.stringify(await figures())}`,
    );
    assert.deepEqual(lost, [], 'the tier’s objects come back with their bytes');
    assert.ok(member.process.running, 'the member still runs');
    passed = true;
  });
});
