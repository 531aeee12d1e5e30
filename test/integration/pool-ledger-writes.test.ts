// Ledger writes to a real multi-tenant master, one tenant at a time: a write or a release that fails for
// one tenant stops nothing for the others and is reported on its own Binding. The failures are injected
// by a proxy in front of the master's admin endpoint (a real master cannot be made to fail one tenant on
// demand); every other request reaches the real master.

import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { KVCachePool } from '../../src/api/types.ts';
import { binding, externalBackend, pool, v1 } from '../builders/index.ts';
import type { AdminFaultProxy } from '../support/admin-fault-proxy.ts';
import { ensureNamespace } from '../support/cluster.ts';
import type { IsolatedCluster } from '../support/isolated-cluster.ts';
import type { MooncakeStore } from '../support/mooncake-store.ts';
import { type InProcessOperator, startOperatorInProcess } from '../support/operator.ts';
import { condition, ledgerTenants, untilBinding } from '../support/pool-waits.ts';
import { startProxiedStore } from '../support/proxied-store.ts';
import { waitFor } from '../support/wait.ts';

const _MiB = 1 << 20;
const ref = (name: string) => ({ apiVersion: v1, kind: 'KVCachePoolBinding', namespace: 'team-a', name });

describe('one tenant’s failed ledger write on a real master', () => {
  let cluster: IsolatedCluster;
  let store: MooncakeStore;
  let proxy: AdminFaultProxy;
  let operator: InProcessOperator;
  /** An edit the pool pass sees (a Binding event), so it runs again without waiting for its interval. */
  const touch = (name: string) =>
    cluster.client.mergePatch(ref(name), {
      metadata: { annotations: { 'kvpool.test/touched': String(Date.now()) } },
    });
  const ready = (name: string) =>
    untilBinding(cluster.client, 'team-a', name, 'Ready', (b) => b.status?.phase === 'Ready');
  const gone = (name: string) =>
    waitFor(async () => ((await cluster.client.find(ref(name))) ? undefined : true), {
      what: `Binding ${name} released`,
      timeoutMs: 10_000,
    });

  before(async () => {
    ({ cluster, store, proxy } = await startProxiedStore());
    for (const ns of ['gpustack-system', 'team-a']) await ensureNamespace(cluster.client, ns);
    operator = await startOperatorInProcess(cluster.cp.kubeconfigPath);
    await cluster.client.create(externalBackend('mooncake-dram', store, proxy.address));
    await cluster.client.create(
      pool('shared-dram', { backend: 'mooncake-dram', total: '999999999999999999' }),
    );
  });
  after(async () => {
    await operator?.stop();
    await proxy?.stop();
    await store?.stop();
    await cluster?.stop();
  });

  it('writes every other tenant, and reports the failure on that Binding alone', async () => {
    proxy.fail('PUT', 'beta');
    for (const name of ['alpha', 'beta', 'gamma'])
      await cluster.client.create(
        binding('team-a', name, { pool: 'shared-dram', ceiling: '8Mi', domain: name }),
      );
    await ready('alpha');
    await ready('gamma');
    const beta = await untilBinding(
      cluster.client,
      'team-a',
      'beta',
      'its write failure',
      (b) => condition(b, 'QuotaGranted')?.reason === 'LedgerRequestFailed',
    );
    assert.equal(beta.status?.phase, 'Error');
    assert.match(
      condition(beta, 'QuotaGranted')!.message,
      /^writing domain beta's ceiling \(8Mi\) to the master failed: .*injected fault.*; retrying$/,
    );
    assert.deepEqual(await ledgerTenants(store), ['alpha', 'gamma']);
    const p = await cluster.client.get<KVCachePool>({
      apiVersion: v1,
      kind: 'KVCachePool',
      name: 'shared-dram',
    });
    assert.equal(p.status?.phase, 'Ready', 'the master as a whole is fine');
    // Nothing changes in the cluster: the operator retries the failed write on its own.
    proxy.clear();
    await untilBinding(
      cluster.client,
      'team-a',
      'beta',
      'Ready by the retry',
      (b) => b.status?.phase === 'Ready',
      20_000,
    );
    assert.deepEqual(await ledgerTenants(store), ['alpha', 'beta', 'gamma']);
  });

  it('releases every other Binding when one entry’s delete fails', async () => {
    proxy.fail('DELETE', 'alpha');
    await cluster.client.delete(ref('alpha'));
    await cluster.client.delete(ref('gamma'));
    await gone('gamma');
    const alpha = await untilBinding(
      cluster.client,
      'team-a',
      'alpha',
      'its release failure',
      (b) => condition(b, 'Releasable')?.reason === 'LedgerRequestFailed',
    );
    assert.match(condition(alpha, 'Releasable')!.message, /removing domain alpha from the ledger failed/);
    assert.deepEqual(await ledgerTenants(store), ['alpha', 'beta']);
    proxy.clear();
    await touch('alpha');
    await gone('alpha');
    assert.deepEqual(await ledgerTenants(store), ['beta']);
  });

  it('writes and reports a ceiling above 2^53 bytes exactly', async () => {
    const exact = '9007199254740993'; // 2^53 + 1: a JavaScript number would make it ...992
    await cluster.client.create(
      binding('team-a', 'huge', { pool: 'shared-dram', ceiling: exact, domain: 'huge' }),
    );
    const b = await untilBinding(
      cluster.client,
      'team-a',
      'huge',
      'its requested quota read back',
      (x) => x.status?.requestedQuota !== undefined,
    );
    assert.equal(b.status?.requestedQuota, exact);
    const listing = await (await fetch(`${store.adminUrl}/api/v1/tenant_quotas?tenant_id=huge`)).text();
    assert.match(listing, new RegExp(`"requested_quota_bytes":${exact}[,}]`));
    assert.match(
      await store.metrics(),
      new RegExp(`^mooncake_tenant_quota_requested_bytes\\{tenant_id="huge"\\} ${exact}$`, 'm'),
    );
  });
});
