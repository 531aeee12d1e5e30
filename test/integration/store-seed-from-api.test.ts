// A new leader seeds its master's tenant policy from the ConfigMap in the API, not from its mounted copy,
// which the kubelet refreshes only every sync period. Real kvpool-store processes and the wheel's master
// against the shared apiserver, run with the flags, account and Lease the operator renders for a backend.

import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { ConfigMap } from 'kubernetes-types/core/v1.js';
import type { Role } from 'kubernetes-types/rbac/v1.js';
import type { ManagedProcess } from '../../local/processes.ts';
import { renderBackend } from '../../src/controllers/backend/render.ts';
import { renderPolicy, renderSeedConfigMap } from '../../src/controllers/pool/seed-policy.ts';
import { KubeClient, type KubeObject } from '../../src/kube/client.ts';
import { ApiError } from '../../src/kube/errors.ts';
import { seedConfigMapName } from '../../src/vocabulary/store-objects.ts';
import { backend } from '../builders/index.ts';
import { ensureNamespace, testClient, testKubeconfig, uniqueName } from '../support/cluster.ts';
import { LeaseRecorder } from '../support/lease-recorder.ts';
import { type AccountKubeconfig, accountKubeconfig } from '../support/operator-access.ts';
import { probe, type StoreLeader, type StorePod, startStoreLeader } from '../support/store-program.ts';
import { waitFor } from '../support/wait.ts';

const ns = 'store-seed';
const MiB = 1 << 20;
const teamA = 32n * BigInt(MiB);
const someoneElse = 4n * BigInt(MiB);

let admin: KubeClient;
const logDir = mkdtempSync(join(tmpdir(), 'kvpool-store-seed-'));
const processes: ManagedProcess[] = [];
const recorders: LeaseRecorder[] = [];
const accounts: AccountKubeconfig[] = [];
const addressBlock = 100 + (process.pid % 150);
let lastHost = 0;

/** Without the owner reference: the fixture backend does not exist, and the collector would delete its children. */
function unowned<T extends KubeObject>(obj: T): T {
  const { ownerReferences: _, ...metadata } = obj.metadata;
  return { ...obj, metadata };
}

/** A backend's store objects as the operator renders them: its leader account, its Lease and its seed. */
async function renderedStore(tenants: Map<string, bigint>, changeRole?: (role: Role) => Role) {
  const b = backend(uniqueName('seeded'));
  const rendered = renderBackend(b, {
    namespace: ns,
    defaultImage: 'kvpool-store:test',
    boundNamespaces: [],
  });
  for (const obj of [...rendered.rbac, rendered.lease!]) {
    const changed = obj.kind === 'Role' && changeRole ? changeRole(obj as Role) : obj;
    await admin.apply(unowned(changed as KubeObject), { fieldManager: 'kvpool-test' });
  }
  await writeSeed(b.metadata.name!, tenants);
  const account = await accountKubeconfig(
    admin,
    testKubeconfig(),
    ns,
    rendered.leaderDeployment.metadata.name,
  );
  accounts.push(account);
  const args = rendered.leaderDeployment.spec!.template.spec!.containers[0]!.args!;
  return { name: b.metadata.name!, lease: rendered.lease!.metadata.name!, args, account };
}

/** What the pool reconciler does once a pass has read the master's ledger: the seed ConfigMap, in the API. */
async function writeSeed(backendName: string, tenants: Map<string, bigint>): Promise<void> {
  const b = backend(backendName);
  await admin.apply(unowned(renderSeedConfigMap(b, ns, tenants)), {
    fieldManager: 'kvpool-test',
    force: true,
  });
}

/**
 * A leader replica run with the rendered kvpool-store flags, its own copy of the seed standing in for
 * the mounted ConfigMap (the probe and metrics ports and the master's flags are the test's).
 */
async function replica(store: Awaited<ReturnType<typeof renderedStore>>, mounted: Map<string, bigint>) {
  lastHost += 1;
  const pod: StorePod = {
    name: uniqueName('leader'),
    namespace: ns,
    ip: `127.61.${addressBlock}.${lastHost}`,
  };
  const dir = mkdtempSync(join(logDir, 'policy-'));
  const seed = join(dir, 'seed.yaml');
  const file = join(dir, 'policy.yaml');
  writeFileSync(seed, renderPolicy(mounted));
  const own = store.args
    .slice(1, store.args.indexOf('--'))
    .filter((a) => !/^--(probe|metrics)-port=/.test(a))
    .map((a) => a.replace(/^--policy-seed=.*/, `--policy-seed=${seed}`))
    .map((a) => a.replace(/^--policy-file=.*/, `--policy-file=${file}`));
  const leader = await startStoreLeader({
    pod,
    flags: own,
    masterArgs: ['-enable_multi_tenants=true', `-tenant_quota_connector_uri=${file}`],
    logDir,
    kubeconfig: store.account.path,
  });
  processes.push(leader.process);
  return leader;
}

function waitReady(leader: StoreLeader) {
  return waitFor(async () => ((await probe(leader, '/readyz')).status === 200 ? true : undefined), {
    what: `${leader.pod.name} /readyz to answer 200 (logs: ${leader.process.logFile})`,
    timeoutMs: 30_000,
  });
}

/** The tenants the master's ledger holds by policy, at their quotas. */
async function tenantQuotas(leader: StoreLeader): Promise<Record<string, number>> {
  const res = await fetch(`${leader.adminUrl}/api/v1/tenant_quotas`, { signal: AbortSignal.timeout(2000) });
  const body = (await res.json()) as {
    data: { tenant_id: string; requested_quota_bytes: number; has_explicit_policy?: boolean }[];
  };
  return Object.fromEntries(
    body.data
      .filter((t) => t.has_explicit_policy !== false)
      .map((t) => [t.tenant_id, t.requested_quota_bytes]),
  );
}

before(async () => {
  admin = await testClient();
  await ensureNamespace(admin, ns);
});

after(async () => {
  for (const p of [...processes].reverse()) await p.stop();
  for (const r of recorders) await r.stop();
  for (const a of accounts) a.remove();
  await admin?.close();
  rmSync(logDir, { recursive: true, force: true });
});

describe('a standby whose mounted seed lags the API', () => {
  it('takes over with a tenant registered just before a graceful failover', async () => {
    const store = await renderedStore(new Map([['team-a', teamA]]));
    const recorder = LeaseRecorder.start(admin, ns, store.lease);
    recorders.push(recorder);
    const first = await replica(store, new Map([['team-a', teamA]]));
    await waitReady(first);
    const standby = await replica(store, new Map([['team-a', teamA]]));
    await waitFor(
      async () => ((await probe(standby, '/readyz')).reason.startsWith('standby:') ? true : undefined),
      {
        what: 'the second replica to campaign as a standby',
        timeoutMs: 15_000,
      },
    );
    // Someone registers a tenant on the serving master; the operator's next pass copies it into the
    // ConfigMap. The standby's mounted copy is not refreshed: the kubelet's sync period has not come.
    const put = await fetch(`${first.adminUrl}/api/v1/tenant_quotas?tenant_id=someone-else`, {
      method: 'PUT',
      body: JSON.stringify({ requested_quota_bytes: Number(someoneElse) }),
    });
    assert.equal(put.status, 200, await put.text());
    await writeSeed(
      store.name,
      new Map([
        ['team-a', teamA],
        ['someone-else', someoneElse],
      ]),
    );
    const t0 = performance.now();
    process.kill(first.process.pid!, 'SIGTERM');
    await recorder.waitForHolder(standby.identity, t0, 15_000);
    await waitReady(standby);
    console.log(
      `graceful failover: the standby ready ${Math.round(performance.now() - t0)} ms after SIGTERM`,
    );
    assert.deepEqual(
      await tenantQuotas(standby),
      { 'team-a': Number(teamA), 'someone-else': Number(someoneElse) },
      `the new master starts with the tenant the API's seed carries (logs: ${standby.process.logFile})`,
    );
  });
});

describe('a new leader that cannot read the seed from the API', () => {
  it('seeds from its mounted copy and logs why', async () => {
    // A Role from before the leader read the seed: the Lease alone, so the read is refused.
    const store = await renderedStore(
      new Map([
        ['team-a', teamA],
        ['someone-else', someoneElse],
      ]),
      (role) => ({
        ...role,
        rules: role.rules!.filter((r) => r.resources?.includes('leases')),
      }),
    );
    const leader = await replica(store, new Map([['team-a', teamA]]));
    await waitReady(leader);
    assert.deepEqual(await tenantQuotas(leader), { 'team-a': Number(teamA) });
    const lines = readFileSync(leader.process.logFile, 'utf8').split('\n');
    const why = lines.find((l) => l.includes('from the mounted copy'));
    assert.ok(why, `a line saying the mounted copy stood in (logs: ${leader.process.logFile})`);
    assert.match(why, /Forbidden/, 'the line names the error');
  });
});

describe("the leader's account", () => {
  it('may read its own seed ConfigMap and no other', async () => {
    const store = await renderedStore(new Map([['team-a', teamA]]));
    const other = uniqueName('other');
    await admin.apply(
      {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: other, namespace: ns },
        data: {},
      } as KubeObject,
      { fieldManager: 'kvpool-test' },
    );
    const account = await KubeClient.fromKubeconfigFile(store.account.path);
    try {
      const ref = { apiVersion: 'v1', kind: 'ConfigMap', namespace: ns };
      const own = await account.get<KubeObject<ConfigMap>>({ ...ref, name: seedConfigMapName(store.name) });
      assert.match(own.data?.['tenant-quota-policy.yaml'] ?? '', /team-a/);
      await assert.rejects(
        account.get({ ...ref, name: other }),
        (err) => err instanceof ApiError && err.status === 403,
      );
    } finally {
      await account.close();
    }
  });
});
