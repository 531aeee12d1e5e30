// The real Mooncake store from the published wheel: capacity from real members, and tenant isolation.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { MooncakeStore } from '../support/mooncake-store.ts';
import { runStoreClient } from '../support/store-client.ts';

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
