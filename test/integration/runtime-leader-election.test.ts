// Two real operator processes on one Lease (15 s / 10 s / 2 s): exactly one leads; a SIGKILLed
// leader is replaced within leaseDuration + retryPeriod; a SIGTERMed one within about a retryPeriod.
// They run as the chart's ServiceAccount (its RBAC rendered for this namespace).

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Lease } from 'kubernetes-types/coordination/v1.js';
import type { ManagedProcess } from '../../local/processes.ts';
import type { KubeClient } from '../../src/kube/client.ts';
import type { KubeObject } from '../../src/kube/object.ts';
import { uniqueName } from '../support/cluster.ts';
import { type IsolatedCluster, startIsolatedCluster } from '../support/isolated-cluster.ts';
import {
  type AccountKubeconfig,
  accountKubeconfig,
  installOperatorAccess,
} from '../support/operator-access.ts';
import { startOperatorProcess } from '../support/operator-process.ts';
import { waitFor } from '../support/wait.ts';

const ns = 'leader-election';
const leaseDurationMs = 15_000;
const retryPeriodMs = 2_000;

describe('operator leader election', () => {
  let client: KubeClient;
  let cluster: IsolatedCluster;
  let account: AccountKubeconfig;
  const leaseName = uniqueName('kvpool-operator');
  const logDir = mkdtempSync(join(tmpdir(), 'kvpool-le-'));
  const operators = new Map<string, ManagedProcess>();

  const start = (id: string) =>
    operators
      .set(id, startOperatorProcess(account.path, id, ['--namespace', ns, '--lease-name', leaseName], logDir))
      .get(id)!;
  const holder = async () =>
    (
      await client.find<KubeObject<Lease>>({
        apiVersion: 'coordination.k8s.io/v1',
        kind: 'Lease',
        namespace: ns,
        name: leaseName,
      })
    )?.spec?.holderIdentity;
  const waitForHolder = (ids: string[], timeoutMs: number) =>
    waitFor(holder, {
      what: `one of ${ids} to hold the lease`,
      until: (h) => ids.includes(h),
      timeoutMs,
      intervalMs: 50,
    });

  before(async () => {
    cluster = await startIsolatedCluster();
    client = cluster.client;
    await installOperatorAccess(client, ns);
    account = await accountKubeconfig(client, cluster.cp.kubeconfigPath, ns);
  });
  after(async () => {
    for (const p of operators.values()) await p.stop();
    await cluster?.stop();
    account?.remove();
    rmSync(logDir, { recursive: true, force: true });
  });

  it('elects exactly one leader among two replicas, and it stays leader', async () => {
    start('op-a');
    start('op-b');
    const first = await waitForHolder(['op-a', 'op-b'], 30_000);
    for (let i = 0; i < 6; i++) {
      await sleep(retryPeriodMs / 2);
      assert.equal(await holder(), first, 'leadership does not flap while both run');
    }
    const lease = await client.get<KubeObject<Lease>>({
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      namespace: ns,
      name: leaseName,
    });
    assert.equal(lease.spec?.leaseDurationSeconds, 15);
    assert.match(lease.spec?.renewTime ?? '', /\.\d{6}Z$/, 'MicroTime');
  });

  it('hands over within leaseDuration + retryPeriod after the leader is SIGKILLed', async () => {
    const leader = (await holder())!;
    const standby = leader === 'op-a' ? 'op-b' : 'op-a';
    const t0 = performance.now();
    operators.get(leader)!.signal('SIGKILL');
    await waitForHolder([standby], leaseDurationMs + retryPeriodMs + 10_000);
    const handover = performance.now() - t0;
    console.log(`SIGKILL handover: ${Math.round(handover)} ms`);
    assert.ok(handover <= leaseDurationMs + retryPeriodMs * 1.2 + 500, `took ${Math.round(handover)} ms`);
    assert.ok(
      handover >= leaseDurationMs - retryPeriodMs * 1.2 - 500,
      'the standby waited for the lease to expire',
    );
  });

  it('hands over within about one retryPeriod after the leader is SIGTERMed, which exits 0', async () => {
    const leader = (await holder())!;
    start('op-c');
    await sleep(retryPeriodMs * 2);
    assert.equal(await holder(), leader, 'a new replica does not steal a live lease');
    const t0 = performance.now();
    const leaderProcess = operators.get(leader)!;
    leaderProcess.signal('SIGTERM');
    await waitForHolder(['op-c'], 10_000);
    const handover = performance.now() - t0;
    console.log(`SIGTERM handover: ${Math.round(handover)} ms`);
    assert.ok(handover <= retryPeriodMs * 1.2 + 1000, `took ${Math.round(handover)} ms`);
    const exit = await leaderProcess.exited;
    assert.equal(exit.code, 0);
  });
});
