// kvpool-store's leader through an API outage, with the default Lease timing, against the real apiserver
// and the wheel's mooncake_master and member. The outage is a network fault injected by a TCP relay
// between the leader process and the apiserver (test/support/api-relay.ts): the processes share the
// host network, and the apiserver is shared with other tests, so it cannot be stopped or cut for real.

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Lease } from 'kubernetes-types/coordination/v1.js';
import type { ManagedProcess } from '../../local/processes.ts';
import type { KubeClient } from '../../src/kube/client.ts';
import { leaseTimingFlags, storeLeaseDefaults as timings } from '../../src/kube/lease-timing.ts';
import type { KubeObject } from '../../src/kube/object.ts';
import { ApiRelay, type RelayMode } from '../support/api-relay.ts';
import { ensureNamespace, testClient, testKubeconfig, uniqueName } from '../support/cluster.ts';
import { LeaseRecorder, leaseRef } from '../support/lease-recorder.ts';
import { runStoreClient } from '../support/store-client.ts';
import {
  masterPid,
  probe,
  type StoreLeader,
  type StorePod,
  startStoreLeader,
  startStoreMember,
} from '../support/store-program.ts';
import { waitFor } from '../support/wait.ts';

const ns = 'store-outage';
const MiB = 1 << 20;
const outageMs = 6000;
const sampleMs = 100;
const addressBlock = 100 + ((process.pid + 77) % 150);
let lastHost = 0;
let client: KubeClient;
const logDir = mkdtempSync(join(tmpdir(), 'kvpool-store-outage-'));
const processes: ManagedProcess[] = [];
const relays: ApiRelay[] = [];
const recorders: LeaseRecorder[] = [];

function newPod(prefix: string): StorePod {
  lastHost += 1;
  return { name: uniqueName(prefix), namespace: ns, ip: `127.61.${addressBlock}.${lastHost}` };
}

async function leaderOn(pod: StorePod, lease: string, kubeconfig?: string): Promise<StoreLeader> {
  const flags = ['--election=Kubernetes', `--lease=${ns}/${lease}`, ...leaseTimingFlags(timings)];
  const leader = await startStoreLeader({ pod, flags, logDir, kubeconfig });
  processes.push(leader.process);
  return leader;
}

async function relayed(): Promise<{ relay: ApiRelay; kubeconfig: string }> {
  const relay = await ApiRelay.start(testKubeconfig());
  relays.push(relay);
  return { relay, kubeconfig: relay.kubeconfigThrough(testKubeconfig(), logDir) };
}

function waitReady(leader: StoreLeader) {
  return waitFor(async () => ((await probe(leader, '/readyz')).status === 200 ? true : undefined), {
    what: `${leader.pod.name} /readyz to answer 200 (logs: ${logDir})`,
    timeoutMs: 30_000,
  });
}

async function readyStatus(leader: StoreLeader): Promise<number> {
  try {
    return (await probe(leader, '/readyz')).status;
  } catch {
    return 0;
  }
}

/** Whether the master answers `service_ready: true` on its admin port. */
async function masterServing(leader: StoreLeader): Promise<boolean> {
  try {
    const res = await fetch(`${leader.adminUrl}/health`, { signal: AbortSignal.timeout(500) });
    return ((await res.json()) as { service_ready?: boolean }).service_ready === true;
  } catch {
    return false;
  }
}

const leaseOf = (lease: string) => client.get<KubeObject<Lease>>(leaseRef(ns, lease));

before(async () => {
  client = await testClient();
  await ensureNamespace(client, ns);
});

after(async () => {
  for (const p of [...processes].reverse()) await p.stop();
  for (const r of relays) await r.close();
  for (const r of recorders) await r.stop();
  await client?.close();
  rmSync(logDir, { recursive: true, force: true });
});

describe(`an API outage of ${outageMs / 1000} s (Lease ${timings.leaseDurationMs / 1000} s, renew deadline ${timings.renewDeadlineMs / 1000} s, retry ${timings.retryPeriodMs} ms)`, () => {
  const lease = uniqueName('outage');
  const data = Buffer.from(Array.from({ length: 4096 }, (_, i) => (i * 7) % 251));
  let relay: ApiRelay;
  let leader: StoreLeader;

  before(async () => {
    const through = await relayed();
    relay = through.relay;
    leader = await leaderOn(newPod('leader'), lease, through.kubeconfig);
    await waitReady(leader);
    const member = await startStoreMember({
      pod: newPod('member'),
      master: leader.identity,
      segmentBytes: 64 * MiB,
      logDir,
    });
    processes.push(member.process);
    const [put] = await waitFor(
      async () => {
        const results = await runStoreClient({ master: leader.identity, host: '127.0.0.1' }, [
          { op: 'put', key: 'before-the-outage', data },
        ]);
        return (results[0] as { rc: number }).rc === 0 ? results : undefined;
      },
      { what: 'a put to succeed once the member mounted', timeoutMs: 60_000, intervalMs: 500 },
    );
    assert.deepEqual(put, { rc: 0 });
  });

  for (const mode of ['refuse', 'hang'] as RelayMode[]) {
    it(`(${mode === 'refuse' ? 'connections refused' : 'calls hang'}): the same master keeps serving, and a key written before reads back`, async () => {
      const pid = masterPid(leader);
      assert.ok(pid, 'the leader runs a master');
      const before = (await leaseOf(lease)).spec!;
      await relay.set(mode);
      const t0 = performance.now();
      let over = false;
      const ended = sleep(outageMs).then(async () => {
        await relay.set('pass');
        over = true;
      });
      const unready: number[] = [];
      while (!over) {
        if ((await readyStatus(leader)) !== 200) unready.push(Math.round(performance.now() - t0));
        assert.equal(masterPid(leader), pid, 'the master process is never restarted');
        await sleep(sampleMs);
      }
      await ended;
      // The leader's own word that a renewal got through (a late copy of an old one may land too).
      const answer = await waitFor(
        async () => {
          const a = await probe(leader, '/readyz');
          const age = /Lease renewed (\d+\.\d) s ago/.exec(a.reason)?.[1];
          return a.status === 200 && age !== undefined && Number(age) < 0.5 ? a : undefined;
        },
        { what: 'the leader to report a fresh renewal', timeoutMs: 2000, intervalMs: 20 },
      );
      console.log(
        `${mode} outage of ${outageMs} ms: renewed ${Math.round(performance.now() - t0 - outageMs)} ms after it ended (${answer.reason})`,
      );
      const renewed = (await leaseOf(lease)).spec!;
      assert.deepEqual(unready, [], 'ready throughout the outage');
      assert.equal(renewed.holderIdentity, leader.identity);
      assert.equal(renewed.leaseTransitions, before.leaseTransitions, 'no other holder meanwhile');
      // Long enough for a leader that stood down to have killed its master.
      await sleep(500);
      assert.equal(masterPid(leader), pid, 'the same master serves after the outage');
      const [get] = await runStoreClient({ master: leader.identity, host: '127.0.0.1' }, [
        { op: 'get', key: 'before-the-outage' },
      ]);
      assert.ok(get && 'data' in get && get.data.equals(data), 'the key written before reads back');
    });
  }
});

describe('a hang longer than the renew deadline, while a standby reaches the API', () => {
  it('kills the master and fails readiness by the deadline; the standby takes over only after', async () => {
    const lease = uniqueName('partition');
    const recorder = LeaseRecorder.start(client, ns, lease);
    recorders.push(recorder);
    const through = await relayed();
    const cut = await leaderOn(newPod('cut'), lease, through.kubeconfig);
    await waitReady(cut);
    const standby = await leaderOn(newPod('standby'), lease);
    await waitFor(
      async () =>
        (await probe(standby, '/readyz')).reason.startsWith('standby: the Lease is held by')
          ? true
          : undefined,
      {
        what: 'the standby to see the holder',
        timeoutMs: 10_000,
      },
    );
    await through.relay.set('hang');
    const t0 = performance.now();
    let killedAt: number | undefined;
    let unreadyAt: number | undefined;
    let bothServing = 0;
    while (performance.now() - t0 < timings.leaseDurationMs + 5000) {
      const now = performance.now() - t0;
      const [cutServing, standbyServing, cutReady] = await Promise.all([
        masterServing(cut),
        masterServing(standby),
        readyStatus(cut),
      ]);
      if (cutServing && standbyServing) bothServing += 1;
      if (killedAt === undefined && masterPid(cut) === undefined) killedAt = now;
      if (unreadyAt === undefined && cutReady !== 200) unreadyAt = now;
      if (killedAt !== undefined && standbyServing) break;
      await sleep(50);
    }
    const takenAt = (await recorder.waitForHolder(standby.identity, t0, 5000)) - t0;
    console.log(
      `hang: cut leader's master killed at ${Math.round(killedAt ?? -1)} ms, unready at ${Math.round(unreadyAt ?? -1)} ms, standby took the Lease at ${Math.round(takenAt)} ms`,
    );
    // The last renewal that got through was sent before the cut, at most a retry period (and a round
    // trip) earlier; samples are 50 ms apart and each takes up to a few ms.
    const bound = timings.renewDeadlineMs + 150;
    assert.ok(
      killedAt !== undefined && killedAt <= bound,
      `master killed at ${killedAt} ms, bound ${bound} ms`,
    );
    assert.ok(unreadyAt !== undefined && unreadyAt <= bound, `unready at ${unreadyAt} ms, bound ${bound} ms`);
    const earliest = timings.renewDeadlineMs - timings.retryPeriodMs - 200;
    assert.ok(killedAt >= earliest, `it rode out the outage until ${killedAt} ms (>= ${earliest})`);
    assert.ok(takenAt >= killedAt, 'the standby took the Lease only after the master was killed');
    assert.equal(bothServing, 0, 'never two masters serving');
    assert.equal(cut.process.exit, undefined, 'the cut replica keeps running and campaigns again');
    await through.relay.set('pass');
    await waitFor(
      async () =>
        (await probe(cut, '/readyz')).reason === `standby: the Lease is held by ${standby.identity}`
          ? true
          : undefined,
      {
        what: 'the cut replica to rejoin as a standby',
        timeoutMs: 10_000,
      },
    );
  });
});
