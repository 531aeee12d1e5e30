// A replica that loses the operator Lease stops writing before its successor writes. Replica 1 leads and
// its pool pass is held in a ledger write still on its way to the real master (a proxy holds it, as a
// slow network would); the Lease is then taken from it by a rival that never renews its 3 s record, and
// replica 2 takes it once that expires and writes. Replica 1 renews a 60 s Lease every second, so a
// loaded machine's stalls cannot cost it the Lease before the rival takes it, and it learns of the loss
// at its next renewal, well before the record expires. Every write either replica makes is recorded where it lands: the API
// server's audit log (by User-Agent) and the proxy in front of the master. Replica 1 writes nothing,
// API or store, after replica 2's first write: its held write is cancelled, and its pass goes no further.

import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { binding, externalBackend, pool } from '../builders/index.ts';
import { AdminFaultProxy } from '../support/admin-fault-proxy.ts';
import { type AuditedWrite, auditedWrites, describeWrite } from '../support/audit-log.ts';
import { ensureNamespace } from '../support/cluster.ts';
import { type IsolatedCluster, startIsolatedCluster } from '../support/isolated-cluster.ts';
import { LeaseRecorder, takeLease } from '../support/lease-recorder.ts';
import { MooncakeStore } from '../support/mooncake-store.ts';
import { type InProcessOperator, startOperatorInProcess } from '../support/operator.ts';
import { untilBinding } from '../support/pool-waits.ts';
import { waitFor } from '../support/wait.ts';

const MiB = 1 << 20;
const ns = 'gpustack-system';
const leaseName = 'kvpool-operator';
const agent = (identity: string) => `kvpool-operator (${identity})`;

/** A write as it landed: on the API server (audited) or on the master (passed on by the proxy). */
interface LandedWrite {
  at: number;
  by: string;
  lease: boolean;
  what: string;
}

describe('a replica that lost the operator Lease', () => {
  let cluster: IsolatedCluster;
  let store: MooncakeStore;
  let proxy: AdminFaultProxy;
  let recorder: LeaseRecorder | undefined;
  const replicas: InProcessOperator[] = [];

  before(async () => {
    [cluster, store] = await Promise.all([
      startIsolatedCluster({ auditWrites: true }),
      MooncakeStore.start({ members: 1, memberBytes: 64 * MiB, tenants: [] }),
    ]);
    proxy = new AdminFaultProxy(store.adminAddress);
    await proxy.start();
    for (const name of [ns, 'team-a']) await ensureNamespace(cluster.client, name);
  });
  after(async () => {
    proxy?.release();
    for (const r of replicas.reverse()) await r.stop();
    await recorder?.stop();
    await proxy?.stop();
    await store?.stop();
    await cluster?.stop();
  });

  it('writes nothing, to the API or the store, after its successor’s first write', async () => {
    const admin = cluster.client;
    recorder = LeaseRecorder.start(admin, ns, leaseName);
    let drained = false;
    replicas.push(
      await startOperatorInProcess(cluster.cp.kubeconfigPath, {
        identity: 'replica-1',
        leaderElection: { leaseName, leaseDurationMs: 60_000, renewDeadlineMs: 40_000, retryPeriodMs: 1_000 },
        // Called once every reconcile replica 1 had running has returned.
        onLostLeadership: () => {
          drained = true;
        },
      }),
    );
    await recorder.waitForHolder('replica-1', 0, 30_000);
    replicas.push(
      await startOperatorInProcess(cluster.cp.kubeconfigPath, {
        identity: 'replica-2',
        leaderElection: { leaseName, leaseDurationMs: 10_000, renewDeadlineMs: 8_000, retryPeriodMs: 500 },
      }),
    );

    await admin.create(externalBackend('mooncake-dram', store, proxy.address));
    await admin.create(pool('shared-dram', { backend: 'mooncake-dram', total: '999999999999999999' }));
    await admin.create(binding('team-a', 'alpha', { pool: 'shared-dram', ceiling: '8Mi', domain: 'alpha' }));
    await untilBinding(admin, 'team-a', 'alpha', 'Ready', (b) => b.status?.phase === 'Ready', 30_000);

    // Replica 1's pass for a new Binding is held in its ledger write.
    const held = proxy.hold('PUT', 'beta');
    await admin.create(binding('team-a', 'beta', { pool: 'shared-dram', ceiling: '8Mi', domain: 'beta' }));
    const write = await held;
    assert.equal(write.userAgent, agent('replica-1'), 'the leader sent the held write');

    await takeLease(admin, ns, leaseName, 'ghost', 3);
    const successorsFirst = () => landedWrites().find((w) => w.by === agent('replica-2') && !w.lease);
    const first = await waitFor(successorsFirst, { what: 'replica 2 to write', timeoutMs: 30_000 });
    // Were replica 1 still waiting on it, the write would land now.
    proxy.release();
    await untilBinding(admin, 'team-a', 'beta', 'Ready', (b) => b.status?.phase === 'Ready', 30_000);
    await waitFor(() => (drained ? true : undefined), {
      what: 'replica 1’s reconciles to return',
      timeoutMs: 30_000,
    });

    const writes = landedWrites();
    const loss = writes.find((w) => w.lease && w.by === 'kvpool-admin')!.at;
    const takeover = writes.find((w) => w.lease && w.by === agent('replica-2'))!.at;
    const old = writes.filter((w) => w.by === agent('replica-1'));
    const late = old.filter((w) => w.at >= first.at);
    const ms = (t: number | undefined) => (t === undefined ? 'never' : `${(t - loss).toFixed(1)} ms`);
    console.log(
      `from the Lease taken: replica 1's held write abandoned ${ms(write.abandonedAt)}, its last write ${ms(old.at(-1)?.at)} (${old.at(-1)?.what}); ` +
        `replica 2 took the Lease ${ms(takeover)} and wrote ${ms(first.at)}`,
    );
    assert.deepEqual(
      late.map((w) => `${w.what} ${ms(w.at)} after the loss`),
      [],
      `replica 1 wrote after replica 2's first write (${first.what}, ${ms(first.at)} after the loss)`,
    );
    assert.ok(
      write.abandonedAt !== undefined && write.abandonedAt < takeover,
      'replica 1 cancelled its write in flight before replica 2 took the Lease',
    );
    assert.ok(
      recorder.sightings.every((s) => ['replica-1', 'ghost', 'replica-2'].includes(s.holder)),
      `the Lease went replica-1 → ghost → replica-2: ${recorder.sightings.map((s) => s.holder)}`,
    );
  });

  function landedWrites(): LandedWrite[] {
    const api = auditedWrites(cluster.cp.auditLogPath).map((w: AuditedWrite) => ({
      at: w.at,
      by: w.userAgent.startsWith('kvpool-operator') ? w.userAgent : w.username,
      lease: w.resource === 'leases',
      what: describeWrite(w),
    }));
    const master = proxy.writes.map((w) => ({
      at: w.at,
      by: w.userAgent,
      lease: false,
      what: `${w.method} ledger tenant ${w.tenant} by ${w.userAgent}`,
    }));
    return [...api, ...master].sort((a, b) => a.at - b.at);
  }
});
