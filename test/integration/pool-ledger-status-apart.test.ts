// A pass's status writes do not hold the next pass's ledger writes (decision 41): with the pool's
// status write held, a second Binding's new ceiling still reaches a real master, and once the held
// write goes through every status catches up with the last edit.

import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type ApplyOptions, KubeClient, type KubeObject } from '../../src/kube/client.ts';
import { parseQuantityBytes } from '../../src/vocabulary/quantity.ts';
import { binding, externalBackend, pool, v1 } from '../builders/index.ts';
import { ensureNamespace } from '../support/cluster.ts';
import { type IsolatedCluster, startIsolatedCluster } from '../support/isolated-cluster.ts';
import { MooncakeStore } from '../support/mooncake-store.ts';
import { type InProcessOperator, startOperatorInProcess } from '../support/operator.ts';
import { untilBinding, untilPool } from '../support/pool-waits.ts';
import { waitFor } from '../support/wait.ts';

const MiB = 1 << 20;
const ref = (name: string) => ({ apiVersion: v1, kind: 'KVCachePoolBinding', namespace: 'team-a', name });

/** The master's requested quota for a tenant, read directly. */
async function requested(store: MooncakeStore, tenant: string): Promise<number | undefined> {
  const res = (await (await fetch(`${store.adminUrl}/api/v1/tenant_quotas?tenant_id=${tenant}`)).json()) as {
    data: { requested_quota_bytes: number } | null;
  };
  return res.data?.requested_quota_bytes;
}

describe('status writes apart from the ledger pass', () => {
  let cluster: IsolatedCluster;
  let store: MooncakeStore;
  let operator: InProcessOperator;
  const apply = KubeClient.prototype.apply;
  let held: Promise<void> | undefined;
  let release = () => {};
  let heldWrites = 0;

  before(async () => {
    [cluster, store] = await Promise.all([
      startIsolatedCluster(),
      MooncakeStore.start({ members: 1, memberBytes: 64 * MiB, tenants: [] }),
    ]);
    for (const ns of ['gpustack-system', 'team-a']) await ensureNamespace(cluster.client, ns);
    // Every client's pool status writes wait while `held` is pending (the operator's included).
    KubeClient.prototype.apply = async function (this: KubeClient, obj: KubeObject, options: ApplyOptions) {
      if (held && obj.kind === 'KVCachePool' && options.subresource === 'status') {
        heldWrites++;
        await held;
      }
      return apply.call(this, obj, options);
    } as typeof apply;
    operator = await startOperatorInProcess(cluster.cp.kubeconfigPath);
    await cluster.client.create(externalBackend('mooncake-dram', store));
    await cluster.client.create(pool('shared-dram', { backend: 'mooncake-dram', total: '64Mi' }));
    for (const name of ['a', 'b'])
      await cluster.client.create(
        binding('team-a', name, { pool: 'shared-dram', ceiling: '1Mi', domain: `team-a-${name}` }),
      );
    for (const name of ['a', 'b'])
      await untilBinding(cluster.client, 'team-a', name, 'Ready', (b) => b.status?.phase === 'Ready', 30_000);
  });
  after(async () => {
    release();
    KubeClient.prototype.apply = apply;
    await operator?.stop();
    await store?.stop();
    await cluster?.stop();
  });

  it("writes a second ceiling to the master while the first edit's pool status write is held", async () => {
    held = new Promise((resolve) => {
      release = resolve;
    });
    await cluster.client.mergePatch(ref('a'), { spec: { quota: { ceiling: '2Mi' } } });
    await waitFor(async () => ((await requested(store, 'team-a-a')) === 2 * MiB ? true : undefined), {
      what: "a's 2Mi on the master",
      timeoutMs: 10_000,
    });
    await waitFor(async () => (heldWrites > 0 ? true : undefined), {
      what: "the pass's pool status write held",
      timeoutMs: 10_000,
    });
    await cluster.client.mergePatch(ref('b'), { spec: { quota: { ceiling: '3Mi' } } });
    await waitFor(async () => ((await requested(store, 'team-a-b')) === 3 * MiB ? true : undefined), {
      what: "b's 3Mi on the master while a's pool status write is held",
      timeoutMs: 10_000,
    });
    const stillHeld = heldWrites;
    held = undefined;
    release();
    assert.ok(stillHeld >= 1);
    // The statuses follow the last edit once the held write goes through.
    await untilPool(cluster.client, 'shared-dram', 'ceilings sum to 5Mi', (p) =>
      Boolean(p.status?.conditions?.some((c) => c.message.includes('sum to 5Mi'))),
    );
    const b = await untilBinding(
      cluster.client,
      'team-a',
      'b',
      'granted 3Mi',
      (x) =>
        x.status?.effectiveQuota !== undefined &&
        parseQuantityBytes(x.status.effectiveQuota) === BigInt(3 * MiB),
    );
    assert.equal(b.status?.phase, 'Ready');
  });
});
