// etcd killed and started again while Bindings are created and their ceilings edited without pause, and
// the operator (one replica on the default 15 s / 10 s Lease) keeps a real master's ledger in step. While
// etcd is down the API server cannot serve; once it is back the operator converges: every Binding Ready
// with its last ceiling, the master's ledger and the tenant registry equal to the Bindings. Nothing wrong
// is written on the way: no ledger entry is deleted (no Binding is), every PUT carries a ceiling its
// Binding was given, and no Binding ever reports someone else's tenant, a shared domain or an over-total
// ceiling.

import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { ConfigMap } from 'kubernetes-types/core/v1.js';
import type { KVCachePoolBinding } from '../../src/api/types.ts';
import { Informer } from '../../src/kube/informer.ts';
import type { KubeObject } from '../../src/kube/object.ts';
import { parseQuantityBytes } from '../../src/vocabulary/quantity.ts';
import { binding, externalBackend, pool, v1 } from '../builders/index.ts';
import type { AdminFaultProxy } from '../support/admin-fault-proxy.ts';
import { ensureNamespace } from '../support/cluster.ts';
import type { IsolatedCluster } from '../support/isolated-cluster.ts';
import type { MooncakeStore } from '../support/mooncake-store.ts';
import { type InProcessOperator, startOperatorInProcess } from '../support/operator.ts';
import { startProxiedStore } from '../support/proxied-store.ts';
import { waitFor } from '../support/wait.ts';

const MiB = 1 << 20;
const ns = 'team-a';
const ceilingOf = (b: KVCachePoolBinding) => BigInt(b.spec.quota.ceiling);

describe('the pool controller across an etcd restart under load', () => {
  let cluster: IsolatedCluster;
  let store: MooncakeStore;
  let proxy: AdminFaultProxy;
  let operator: InProcessOperator;
  let watcher: Informer<KVCachePoolBinding>;
  let lostLease = false;
  /** Every ceiling a write tried to give each Binding (whether or not the write was answered). */
  const given = new Map<string, Set<bigint>>();
  /** Misjudgments any Binding status the API server served reported. */
  const errors: string[] = [];

  before(async () => {
    ({ cluster, store, proxy } = await startProxiedStore());
    for (const name of ['gpustack-system', ns]) await ensureNamespace(cluster.client, name);
    operator = await startOperatorInProcess(cluster.cp.kubeconfigPath, {
      leaderElection: {
        leaseName: 'kvpool-operator',
        leaseDurationMs: 15_000,
        renewDeadlineMs: 10_000,
        retryPeriodMs: 2_000,
      },
      onLostLeadership: () => {
        lostLease = true;
      },
    });
    watcher = new Informer<KVCachePoolBinding>(cluster.client, {
      apiVersion: v1,
      kind: 'KVCachePoolBinding',
    });
    // Reasons that would mean a misjudgment here: each domain is one Binding's, each ceiling within the total.
    const wrong = new Set(['TenantExistsOnMaster', 'DomainClaimedByMultipleBindings', 'CeilingAboveTotal']);
    watcher.on((_event, b) => {
      for (const c of b.status?.conditions ?? [])
        if (wrong.has(c.reason)) errors.push(`${b.metadata.name}: ${c.type} ${c.reason}: ${c.message}`);
    });
    watcher.start();
    await cluster.client.create(externalBackend('mooncake-dram', store, proxy.address));
    await cluster.client.create(pool('shared-dram', { backend: 'mooncake-dram', total: String(1 << 30) }));
  });
  after(async () => {
    await watcher?.stop();
    await operator?.stop();
    await proxy?.stop();
    await store?.stop();
    await cluster?.stop();
  });

  it('converges after etcd comes back, having written nothing wrong', async () => {
    const admin = cluster.client;
    const give = (name: string, bytes: bigint) =>
      given.set(name, (given.get(name) ?? new Set()).add(bytes)).get(name);
    for (let i = 0; i < 8; i++) {
      const name = `b${i}`;
      give(name, BigInt((i + 1) * MiB));
      await admin.create(
        binding(ns, name, { pool: 'shared-dram', ceiling: String((i + 1) * MiB), domain: name }),
      );
    }

    // The load: a new Binding or a new ceiling for an existing one, one after another, until stopped.
    let loading = true;
    const answered: { at: number; ok: boolean }[] = [];
    const load = (async () => {
      for (let k = 0; loading; k++) {
        const fresh = k % 3 === 0;
        const name = fresh ? `n${k}` : `b${k % 8}`;
        const bytes = BigInt(MiB + k * 4096);
        give(name, bytes);
        try {
          if (fresh)
            await admin.create(
              binding(ns, name, { pool: 'shared-dram', ceiling: String(bytes), domain: name }),
            );
          else
            await admin.mergePatch(
              { apiVersion: v1, kind: 'KVCachePoolBinding', namespace: ns, name },
              { spec: { quota: { ceiling: String(bytes) } } },
            );
          answered.push({ at: Date.now(), ok: true });
        } catch {
          answered.push({ at: Date.now(), ok: false });
        }
      }
    })();

    const putsBy = (t: number) => proxy.writes.filter((w) => w.method === 'PUT' && w.at >= t).length;
    await waitFor(() => (putsBy(0) >= 10 ? true : undefined), {
      what: 'the operator to write the ledger under load',
      timeoutMs: 30_000,
    });
    const etcdHealthy = async () => {
      try {
        const res = await admin.send('GET', '/readyz/etcd', { timeoutMs: 2_000 });
        await res.body.dump();
        return res.statusCode === 200;
      } catch {
        return false;
      }
    };
    const killedAt = Date.now();
    await cluster.cp.stopEtcd('SIGKILL');
    await waitFor(async () => ((await etcdHealthy()) ? undefined : true), {
      what: 'the API server to report etcd down',
      timeoutMs: 30_000,
    });
    await cluster.cp.startEtcd();
    const backAt = Date.now();
    await waitFor(async () => ((await etcdHealthy()) ? true : undefined), {
      what: 'the API server to report etcd back',
      timeoutMs: 30_000,
    });
    // The load goes on until the API answers it again and the operator has written since.
    await waitFor(
      () => (answered.some((a) => a.ok && a.at > backAt) && putsBy(backAt) >= 3 ? true : undefined),
      {
        what: 'a load write answered and three ledger writes after etcd came back',
        timeoutMs: 60_000,
      },
    );
    loading = false;
    await load;
    const during = answered.filter((a) => a.at >= killedAt && a.at <= backAt);
    console.log(
      `etcd down ${backAt - killedAt} ms; load writes ${answered.length} (${answered.filter((a) => !a.ok).length} failed, ` +
        `${during.length} answered while etcd was down); ledger PUTs ${putsBy(0)}, ${putsBy(backAt)} after etcd came back`,
    );

    // Converged: every Binding Ready with its last ceiling, observed at its current generation.
    const converged = (b: KVCachePoolBinding) =>
      b.status?.phase === 'Ready' &&
      b.status.requestedQuota !== undefined &&
      parseQuantityBytes(b.status.requestedQuota) === ceilingOf(b) &&
      (b.status.conditions ?? []).every((c) => c.observedGeneration === b.metadata.generation);
    const listBindings = async () =>
      (await admin.list<KVCachePoolBinding>({ apiVersion: v1, kind: 'KVCachePoolBinding', namespace: ns }))
        .items;
    await waitFor(
      async () =>
        (await listBindings())
          .filter((b) => !converged(b))
          .map(
            (b) =>
              `${b.metadata.name} gen ${b.metadata.generation} ceiling ${b.spec.quota.ceiling}: ${b.status?.phase} ` +
              `requested ${b.status?.requestedQuota} observed ${b.status?.conditions?.map((c) => `${c.type}@${c.observedGeneration}`)}`,
          ),
      {
        what: 'every Binding Ready with its last ceiling',
        until: (left) => left.length === 0,
        timeoutMs: 60_000,
      },
    );
    const bindings = await listBindings();
    const want = Object.fromEntries(bindings.map((b) => [b.metadata.name!, String(ceilingOf(b))]));
    const listing = (await (await fetch(`${store.adminUrl}/api/v1/tenant_quotas`)).json()) as {
      data: { tenant_id: string; requested_quota_bytes: number }[];
    };
    const ledger = Object.fromEntries(
      listing.data.map((e) => [e.tenant_id, String(e.requested_quota_bytes)]),
    );
    assert.deepEqual(ledger, want, 'the master’s ledger holds each Binding’s last ceiling, and nothing else');
    const registry = await admin.get<KubeObject<ConfigMap>>({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      namespace: 'gpustack-system',
      name: 'mooncake-dram-tenant-registry',
    });
    assert.deepEqual(registry.data?.tenants?.split('\n').sort(), Object.keys(want).sort(), 'the registry');

    // Nothing wrong on the way.
    assert.deepEqual(
      proxy.writes.filter((w) => w.method !== 'PUT').map((w) => `${w.method} ${w.tenant}`),
      [],
      'no ledger entry was deleted',
    );
    const foreign = proxy.writes.filter((w) => {
      const bytes = BigInt(JSON.parse(w.body).requested_quota_bytes);
      return !given.get(w.tenant ?? '')?.has(bytes);
    });
    assert.deepEqual(
      foreign.map((w) => `${w.tenant} ${w.body}`),
      [],
      'every PUT carried a ceiling its Binding was given',
    );
    assert.deepEqual(
      errors,
      [],
      'no Binding ever reported someone else’s tenant, a shared domain or a ceiling over the total',
    );
    assert.equal(lostLease, false, 'the replica kept its Lease');
  });
});
