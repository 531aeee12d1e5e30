// Tenants on a real multi-tenant master that this operator did not register: a Binding naming one
// reports the conflict and leaves it as it is, through the Binding's whole life; tenants the operator
// did register stay its own across an operator restart.

import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { KVCachePool } from '../../src/api/types.ts';
import type { KubeObject } from '../../src/kube/object.ts';
import { binding, v1 } from '../builders/index.ts';
import type { IsolatedCluster } from '../support/isolated-cluster.ts';
import type { MooncakeStore } from '../support/mooncake-store.ts';
import { type InProcessOperator, startOperatorInProcess } from '../support/operator.ts';
import { startPoolStack, stopPoolStack } from '../support/pool-stack.ts';
import { condition, untilBinding } from '../support/pool-waits.ts';
import { untilGone } from '../support/wait.ts';

const MiB = 1 << 20;

describe('tenants someone else registered on the master', () => {
  let cluster: IsolatedCluster;
  let store: MooncakeStore;
  let operator: InProcessOperator;
  const entries = async () => {
    const res = (await (await fetch(`${store.adminUrl}/api/v1/tenant_quotas`)).json()) as {
      data: { tenant_id: string; requested_quota_bytes: number }[];
    };
    return new Map(res.data.map((e) => [e.tenant_id, e.requested_quota_bytes]));
  };
  const putTenant = async (tenant: string, bytes: number) => {
    const res = await fetch(`${store.adminUrl}/api/v1/tenant_quotas?tenant_id=${tenant}`, {
      method: 'PUT',
      body: JSON.stringify({ requested_quota_bytes: bytes }),
    });
    assert.equal(res.status, 200, await res.text());
  };
  const registry = async () => {
    const cm = await cluster.client.find<KubeObject & { data?: Record<string, string> }>({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      namespace: 'gpustack-system',
      name: 'mooncake-dram-tenant-registry',
    });
    return cm?.data?.tenants?.split('\n') ?? [];
  };

  before(async () => {
    ({ cluster, store, operator } = await startPoolStack({ namespaces: ['team-a'] }));
  });
  after(() => stopPoolStack({ operator, store, cluster }));

  it('reports a Binding naming someone else’s tenant as a conflict and leaves the tenant as it is', async () => {
    await putTenant('theirs', 4 * MiB);
    await cluster.client.create(
      binding('team-a', 'grabby', { pool: 'shared-dram', ceiling: '16Mi', domain: 'theirs' }),
    );
    await cluster.client.create(
      binding('team-a', 'own', { pool: 'shared-dram', ceiling: '8Mi', domain: 'ours' }),
    );
    const b = await untilBinding(
      cluster.client,
      'team-a',
      'grabby',
      'a domain conflict',
      (x) => condition(x, 'DomainExclusive')?.reason === 'TenantExistsOnMaster',
    );
    assert.equal(b.status?.phase, 'Error');
    assert.match(b.status?.phaseMessage ?? '', /kvpool did not register: it is left untouched/);
    assert.equal(b.status?.effectiveQuota, undefined, 'no figure of someone else’s tenant is published');
    // The same pass wrote the other Binding's tenant: the conflict was judged with the master's listing.
    await untilBinding(cluster.client, 'team-a', 'own', 'Ready', (x) => x.status?.phase === 'Ready');
    const ledger = await entries();
    assert.equal(ledger.get('theirs'), 4 * MiB, 'not overwritten with the Binding’s 16Mi');
    assert.equal(ledger.get('ours'), 8 * MiB);
    assert.deepEqual(await registry(), ['ours']);
    const p = await cluster.client.get<KVCachePool>({
      apiVersion: v1,
      kind: 'KVCachePool',
      name: 'shared-dram',
    });
    assert.deepEqual(
      p.status?.domains?.map((d) => d.name),
      ['ours'],
    );
  });

  it('does not delete it when that Binding goes', async () => {
    await cluster.client.delete({
      apiVersion: v1,
      kind: 'KVCachePoolBinding',
      namespace: 'team-a',
      name: 'grabby',
    });
    await untilGone(
      cluster.client,
      { apiVersion: v1, kind: 'KVCachePoolBinding', namespace: 'team-a', name: 'grabby' },
      { what: 'the Binding released', timeoutMs: 10_000 },
    );
    assert.equal((await entries()).get('theirs'), 4 * MiB);
  });

  it('keeps the tenants it registered its own across an operator restart', async () => {
    await operator.stop();
    operator = await startOperatorInProcess(cluster.cp.kubeconfigPath);
    await cluster.client.mergePatch(
      { apiVersion: v1, kind: 'KVCachePoolBinding', namespace: 'team-a', name: 'own' },
      { spec: { quota: { ceiling: '12Mi' } } },
    );
    const b = await untilBinding(
      cluster.client,
      'team-a',
      'own',
      'the new ceiling requested',
      (x) => x.status?.requestedQuota === '12Mi',
    );
    assert.equal(condition(b, 'DomainExclusive')?.status, 'True');
    assert.equal((await entries()).get('ours'), 12 * MiB);
  });
});
