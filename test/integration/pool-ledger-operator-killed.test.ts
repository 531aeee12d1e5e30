// The operator SIGKILLed in the middle of a ledger pass, twice, and the next leader finishes it. Real
// operator processes (the chart's account, a 4 s Lease) write a real master's ledger through a proxy that
// holds one chosen request in flight, so the kill lands at a known point of the pass: first with every
// PUT of the pass sent but one, then (the next leader) with the PUTs done and one of three DELETEs held,
// after the master dropped the other two and before the tenant registry was saved. The last leader
// finishes: the master's ledger ends equal to the Bindings (each tenant once, at its ceiling), the
// registry names exactly them, and the deleted Bindings are released; the held requests never reached
// the master and the tenants they were for were written once.

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { ConfigMap } from 'kubernetes-types/core/v1.js';
import type { ManagedProcess } from '../../local/processes.ts';
import type { KVCachePoolBinding } from '../../src/api/types.ts';
import type { KubeObject } from '../../src/kube/object.ts';
import { parseQuantityBytes } from '../../src/vocabulary/quantity.ts';
import { binding, externalBackend, pool, v1 } from '../builders/index.ts';
import type { AdminFaultProxy, HeldRequest } from '../support/admin-fault-proxy.ts';
import { ensureNamespace } from '../support/cluster.ts';
import type { IsolatedCluster } from '../support/isolated-cluster.ts';
import type { MooncakeStore } from '../support/mooncake-store.ts';
import {
  type AccountKubeconfig,
  accountKubeconfig,
  installOperatorAccess,
} from '../support/operator-access.ts';
import { startOperatorProcess } from '../support/operator-process.ts';
import { startProxiedStore } from '../support/proxied-store.ts';
import { waitFor } from '../support/wait.ts';

const MiB = 1 << 20;
const ns = 'gpustack-system';
const team = 'team-a';
const agent = (identity: string) => `kvpool-operator (${identity})`;
const ref = (name: string) => ({ apiVersion: v1, kind: 'KVCachePoolBinding', namespace: team, name });

describe('the operator killed in the middle of a ledger pass', () => {
  let cluster: IsolatedCluster;
  let store: MooncakeStore;
  let proxy: AdminFaultProxy;
  let account: AccountKubeconfig;
  const logDir = mkdtempSync(join(tmpdir(), 'kvpool-ledger-kill-'));
  const operators: ManagedProcess[] = [];

  const start = (identity: string) => {
    const p = startOperatorProcess(
      account.path,
      identity,
      [
        '--namespace',
        ns,
        '--lease-duration-ms',
        '4000',
        '--renew-deadline-ms',
        '3000',
        '--retry-period-ms',
        '500',
        '--store-poll-ms',
        '200',
      ],
      logDir,
    );
    operators.push(p);
    return p;
  };
  /** Resolves when the held request arrives; fails if the operator exits first. */
  const arrival = async (held: Promise<HeldRequest>, op: ManagedProcess) =>
    Promise.race([
      held,
      op.exited.then((exit) => {
        throw new Error(`${op.name} exited before its held request arrived: ${JSON.stringify(exit)}`);
      }),
    ]);
  const writesBy = (identity: string, method: string) =>
    proxy.writes.filter((w) => w.userAgent === agent(identity) && w.method === method).map((w) => w.tenant!);
  const ledger = async () => {
    const res = (await (await fetch(`${store.adminUrl}/api/v1/tenant_quotas`)).json()) as {
      data: { tenant_id: string; requested_quota_bytes: number }[];
    };
    return Object.fromEntries(res.data.map((e) => [e.tenant_id, String(e.requested_quota_bytes)]));
  };
  const registry = async () =>
    (
      await cluster.client.get<KubeObject<ConfigMap>>({
        apiVersion: 'v1',
        kind: 'ConfigMap',
        namespace: ns,
        name: 'mooncake-dram-tenant-registry',
      })
    ).data?.tenants
      ?.split('\n')
      .sort() ?? [];
  const bindings = async () =>
    (
      await cluster.client.list<KVCachePoolBinding>({
        apiVersion: v1,
        kind: 'KVCachePoolBinding',
        namespace: team,
      })
    ).items;
  const settled = (b: KVCachePoolBinding) =>
    !b.metadata.deletionTimestamp &&
    b.status?.phase === 'Ready' &&
    b.status.requestedQuota !== undefined &&
    parseQuantityBytes(b.status.requestedQuota) === BigInt(b.spec.quota.ceiling);
  /**
   * The killed sender's connection closes: the held request is abandoned and so never reaches the master.
   * The proxy sees the close on its own socket, a moment after the process's exit is reported.
   */
  const abandonment = async (held: Promise<HeldRequest>, what: string) => {
    const request = await held;
    await waitFor(() => (request.abandonedAt !== undefined ? true : undefined), {
      what: `${what} abandoned by its killed sender (it never reached the master)`,
      timeoutMs: 10_000,
    });
  };
  const kill = async (op: ManagedProcess) => {
    op.signal('SIGKILL');
    await op.exited;
  };

  before(async () => {
    ({ cluster, store, proxy } = await startProxiedStore());
    for (const name of [ns, team]) await ensureNamespace(cluster.client, name);
    await installOperatorAccess(cluster.client, ns);
    account = await accountKubeconfig(cluster.client, cluster.cp.kubeconfigPath, ns);
    await cluster.client.create(externalBackend('mooncake-dram', store, proxy.address));
    await cluster.client.create(pool('shared-dram', { backend: 'mooncake-dram', total: String(1 << 30) }));
  });
  after(async () => {
    proxy?.release();
    for (const p of operators.reverse()) await p.stop();
    await proxy?.stop();
    await store?.stop();
    await cluster?.stop();
    account?.remove();
    rmSync(logDir, { recursive: true, force: true });
  });

  it('is finished by the next leader: the ledger ends equal to the Bindings, nothing lost or doubled', async () => {
    const admin = cluster.client;
    for (let i = 0; i < 6; i++)
      await admin.create(
        binding(team, `b${i}`, { pool: 'shared-dram', ceiling: String((i + 1) * MiB), domain: `b${i}` }),
      );
    const first = start('op-a');
    await waitFor(async () => ((await bindings()).every(settled) ? true : undefined), {
      what: 'the first six Bindings Ready',
      timeoutMs: 30_000,
    });
    // op-a hands the Lease back; what follows is one pass's work for the next leader.
    first.signal('SIGTERM');
    await first.exited;
    for (let i = 0; i < 12; i++)
      await admin.create(
        binding(team, `n${i}`, { pool: 'shared-dram', ceiling: String((20 + i) * MiB), domain: `n${i}` }),
      );
    await admin.mergePatch(ref('b3'), { spec: { quota: { ceiling: String(40 * MiB) } } });
    for (const name of ['b0', 'b1', 'b2']) await admin.delete(ref(name));

    // op-b's pass: 13 PUTs (eight in flight at once); n3's is held and op-b is killed once the rest landed.
    const heldPut = proxy.hold('PUT', 'n3');
    const b = start('op-b');
    await arrival(heldPut, b);
    // The next replica starts as a standby meanwhile; it takes the Lease once op-b's record runs out.
    const heldDelete = proxy.hold('DELETE', 'b1');
    const c = start('op-c');
    await waitFor(() => (writesBy('op-b', 'PUT').length >= 12 ? true : undefined), {
      what: 'op-b’s other twelve PUTs to land',
      timeoutMs: 30_000,
    });
    await kill(b);
    await abandonment(heldPut, 'op-b’s PUT for n3');
    assert.deepEqual(writesBy('op-b', 'DELETE'), [], 'op-b was killed before its deletes');
    const afterB = await ledger();
    assert.equal(afterB.n3, undefined, 'n3 was not written');
    assert.ok(
      ['b0', 'b1', 'b2'].every((t) => afterB[t] !== undefined),
      'the deleted Bindings’ tenants remain',
    );
    assert.ok((await registry()).includes('n3'), 'n3 was registered before its write');

    // op-c's pass: n3's PUT, then three DELETEs; b1's is held and op-c is killed once b0's and b2's landed.
    await arrival(heldDelete, c);
    const d = start('op-d');
    await waitFor(() => (writesBy('op-c', 'DELETE').length >= 2 ? true : undefined), {
      what: 'op-c’s DELETEs of b0 and b2 to land',
      timeoutMs: 30_000,
    });
    await kill(c);
    await abandonment(heldDelete, 'op-c’s DELETE of b1');
    assert.deepEqual(writesBy('op-c', 'PUT'), ['n3']);
    assert.deepEqual(writesBy('op-c', 'DELETE').sort(), ['b0', 'b2']);
    const afterC = await ledger();
    assert.ok(afterC.b0 === undefined && afterC.b2 === undefined && afterC.b1 !== undefined);
    const registeredAfterC = await registry();
    assert.ok(
      ['b0', 'b1', 'b2'].every((t) => registeredAfterC.includes(t)),
      'op-c was killed before it saved the registry after its deletes',
    );

    // op-d, started as a standby while op-c's DELETE was held, finishes.
    const left = await waitFor(
      async () => {
        d.assertRunning();
        const items = await bindings();
        return items.every(settled) ? items : undefined;
      },
      { what: 'the deleted Bindings released and every other Ready at its ceiling', timeoutMs: 60_000 },
    );
    const want = Object.fromEntries(left.map((x) => [x.metadata.name!, x.spec.quota.ceiling]));
    assert.deepEqual(
      Object.keys(want).sort(),
      ['b3', 'b4', 'b5', ...Array.from({ length: 12 }, (_, i) => `n${i}`)].sort(),
    );
    assert.equal(want.b3, String(40 * MiB));
    assert.deepEqual(await ledger(), want, 'the master’s ledger equals the Bindings');
    assert.deepEqual(await registry(), Object.keys(want).sort(), 'the registry names exactly them');
    const landed = (method: string, tenant: string) =>
      proxy.writes.filter((w) => w.method === method && w.tenant === tenant).map((w) => w.userAgent);
    assert.deepEqual(landed('PUT', 'n3'), [agent('op-c')], 'n3 was written once');
    assert.deepEqual(landed('DELETE', 'b1'), [agent('op-d')], 'b1 was deleted once');
    assert.deepEqual(writesBy('op-d', 'PUT'), [], 'op-d had nothing left to write');
    console.log(
      `PUTs landed: op-b ${writesBy('op-b', 'PUT').length}, op-c ${writesBy('op-c', 'PUT').length}; ` +
        `DELETEs landed: op-c ${writesBy('op-c', 'DELETE')}, op-d ${writesBy('op-d', 'DELETE')}`,
    );
  });
});
