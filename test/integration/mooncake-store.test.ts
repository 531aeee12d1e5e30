// The real Mooncake store from the published wheel: capacity from real members, tenant isolation, and
// what a master grants tenants out of when its members have a disk tier.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { MooncakeStore } from '../support/mooncake-store.ts';
import { runStoreClient } from '../support/store-client.ts';
import { waitFor } from '../support/wait.ts';

const MiB = 1 << 20;

describe('a real Mooncake master with two 64 MiB members', () => {
  let store: MooncakeStore;
  before(async () => {
    store = await MooncakeStore.start({
      members: 2,
      memberBytes: 64 * MiB,
      tenants: [{ name: 'team-a', quota: 32 * MiB }],
    });
  });
  after(() => store?.stop());

  it('reports master_total_capacity_bytes 134217728', async () => {
    assert.equal(await store.metric('master_total_capacity_bytes'), 134217728);
    const detail = (await (await fetch(`${store.adminUrl}/get_segments_detail`)).json()) as {
      segments: { te_endpoint: string }[];
    };
    const hosts = detail.segments.map((s) => s.te_endpoint.split(':')[0]).sort();
    assert.deepEqual(
      hosts,
      store.members.map((m) => m.host).sort(),
      'each member registers from its own address',
    );
  });

  it('round-trips bytes under a tenant registered in the policy', async () => {
    const data = Buffer.from(Array.from({ length: 4096 }, (_, i) => i % 251));
    const [put, get] = await runStoreClient(
      { master: store.rpcAddress, host: '127.0.0.1', tenant: 'team-a' },
      [
        { op: 'put', key: 'block-1', data },
        { op: 'get', key: 'block-1' },
      ],
    );
    assert.deepEqual(put, { rc: 0 });
    assert.ok(get && 'data' in get && get.data.equals(data), 'the bytes read back are the bytes written');
    const charged = (await store.metrics()).match(
      /^mooncake_tenant_quota_charged_bytes\{tenant_id="team-a"\} (\d+)/m,
    );
    assert.ok(
      charged && Number(charged[1]) >= data.length,
      `team-a is charged for the write: ${charged?.[1]}`,
    );
  });

  it('refuses a put under a tenant the policy does not register', async () => {
    const [put] = await runStoreClient({ master: store.rpcAddress, host: '127.0.0.1', tenant: 'team-x' }, [
      { op: 'put', key: 'block-1', data: Buffer.from('x') },
    ]);
    assert.deepEqual(put, { rc: -1701 }, 'TENANT_NOT_REGISTERED');
  });

  it('loses a member’s capacity when it stops and regains it when it returns', async () => {
    await store.stopMember(1);
    await store.waitForCapacity(64 * MiB, 30_000);
    await store.startMember(1);
    await store.waitForCapacity(128 * MiB);
  });
});

// What grants are cut against (docs/concepts.md, tenant ledger): the members' segments; a disk tier
// adds to the capacity the backend reports, not to what the master hands out to tenants.
describe('a real Mooncake master with two 64 MiB members and a 1 GiB disk tier each', () => {
  let store: MooncakeStore;
  before(async () => {
    store = await MooncakeStore.start({
      members: 2,
      memberBytes: 64 * MiB,
      offload: true,
      memberEnv: { MOONCAKE_OFFLOAD_TOTAL_SIZE_LIMIT_BYTES: String(1024 * MiB) },
      tenants: [
        { name: 'team-a', quota: 100 * MiB },
        { name: 'team-b', quota: 100 * MiB },
      ],
    });
  });
  after(() => store?.stop());

  it('grants tenants out of the members’ memory alone, cutting 200 MiB of ceilings to 128 MiB', async () => {
    // The tier registers seconds after the memory segments.
    await waitFor(
      async () =>
        (await store.metric('master_total_file_capacity_bytes')) === 2048 * MiB ? true : undefined,
      { what: 'both members’ tiers registered (2 GiB of file capacity)', timeoutMs: 30_000 },
    );
    const metrics = await store.metrics();
    const sample = (name: string) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(metrics)?.[1]);
    assert.equal(sample('mooncake_tenant_quota_allocatable_capacity_bytes'), 128 * MiB);
    assert.equal(sample('mooncake_tenant_quota_effective_bytes_sum'), 128 * MiB);
    assert.equal(sample('mooncake_tenant_quota_effective_bytes\\{tenant_id="team-a"\\}'), 64 * MiB);
  });
});

// Warm failover (decision 45): a member's disk tier outlives a hard-killed master. With write-through
// offload every put is copied to the tier; the new master starts empty, the member's offload heartbeat
// gets SEGMENT_NOT_FOUND, re-mounts its tier and re-registers what it finds there.
describe('a real Mooncake member with a disk tier, its master SIGKILLed and started again', () => {
  // 80 objects of 256 KiB. The member writes its tier in buckets (64 keys or 16 MiB, as kvpool renders):
  // what a bucket has not taken yet waits in its memory, and is lost with the master like any memory key.
  const keys = Array.from({ length: 80 }, (_, i) => `block-${i}`);
  const bytes = (i: number) => Buffer.from(Array.from({ length: 256 * 1024 }, (_, j) => (i * 31 + j) % 251));

  async function readBack(store: MooncakeStore): Promise<number> {
    const results = await runStoreClient(
      { master: store.rpcAddress, host: '127.0.0.1' },
      keys.map((key) => ({ op: 'get' as const, key })),
    );
    const wrong = results.filter((r, i) => 'data' in r && r.data.length > 0 && !r.data.equals(bytes(i)));
    assert.equal(wrong.length, 0, 'no key reads back other bytes');
    const hits = results.flatMap((r, i) => ('data' in r && r.data.equals(bytes(i)) ? [r.ms ?? 0] : []));
    const misses = results.flatMap((r) => ('data' in r && r.data.length === 0 ? [r.ms ?? 0] : []));
    console.log(
      `read: ${hits.length} hits (max ${Math.max(0, ...hits)} ms), ${misses.length} misses (max ${Math.max(0, ...misses)} ms)`,
    );
    return hits.length;
  }

  for (const mode of ['write-through', 'on-eviction'] as const) {
    it(`${mode}: exactly the objects on the tier at the kill read back, with their bytes`, async () => {
      const store = await MooncakeStore.start({
        members: 1,
        memberBytes: 64 * MiB,
        offload: true,
        masterArgs: [`--offload_on_evict=${mode === 'on-eviction'}`],
        // The offload heartbeat stays the store's (10 s), as kvpool renders it.
        memberEnv: { MOONCAKE_OFFLOAD_TOTAL_SIZE_LIMIT_BYTES: String(1024 * MiB) },
      });
      try {
        await waitFor(
          async () => ((await store.metric('master_total_file_capacity_bytes')) ?? 0) > 0 || undefined,
          { what: 'the tier registered', timeoutMs: 30_000 },
        );
        const puts = await runStoreClient(
          { master: store.rpcAddress, host: '127.0.0.1' },
          keys.map((key, i) => ({ op: 'put' as const, key, data: bytes(i) })),
        );
        assert.ok(
          puts.every((p) => 'rc' in p && p.rc === 0),
          JSON.stringify(puts),
        );
        const written = Date.now();
        // Offload runs on the member's heartbeat; give it two beats to settle.
        await new Promise((r) => setTimeout(r, 22_000));
        const onTier = await store.metric('master_allocated_file_size_bytes');
        const tierObjects = Math.floor((onTier ?? 0) / (256 * 1024));
        console.log(`${mode}: file bytes ${onTier} ${Date.now() - written} ms after the puts`);
        assert.equal(await readBack(store), keys.length, 'all keys read back before the kill');
        await store.stopMaster('SIGKILL');
        const killed = Date.now();
        await store.startMaster();
        console.log(`${mode}: new master serving ${Date.now() - killed} ms after the kill`);
        // The master's key count is free to poll; a client read (5-7 s for a fresh client here) checks the bytes.
        const registered = await waitFor(() => store.metric('master_key_count'), {
          what: 'keys re-registered',
          timeoutMs: mode === 'write-through' ? 45_000 : 20_000,
          intervalMs: 200,
          until: (n) => n >= Math.max(1, tierObjects),
        }).catch(() => undefined);
        const registeredMs = Date.now() - killed;
        const back = await readBack(store);
        console.log(
          `${mode}: key_count ${registered} at ${registeredMs} ms; ${back}/${keys.length} read back with their bytes at ${Date.now() - killed} ms; file bytes ${await store.metric('master_allocated_file_size_bytes')}`,
        );
        console.log(`${mode}: ${tierObjects} objects on the tier at the kill`);
        if (mode === 'write-through') assert.ok(tierObjects > 0, 'write-through put objects on the tier');
        assert.equal(back, tierObjects, 'exactly the tier-resident objects come back');
      } finally {
        await store.stop();
      }
    });
  }
});
