// kvpool-store, the store image's program, run as real processes against the shared apiserver and the
// wheel's mooncake_master and member service: election, readiness, failover, member re-pointing,
// tenant-policy seeding. Each "Pod" has its own 127.60.x.y address, as Pods sharing a host would.

import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Lease } from 'kubernetes-types/coordination/v1.js';
import type { ManagedProcess } from '../../local/processes.ts';
import type { KubeClient } from '../../src/kube/client.ts';
import type { KubeObject } from '../../src/kube/object.ts';
import { emptyPolicy } from '../../src/kvpool-store/tenant-policy-seed.ts';
import { ensureNamespace, testClient, uniqueName } from '../support/cluster.ts';
import { LeaseRecorder, leaseRef, takeLease } from '../support/lease-recorder.ts';
import {
  adminAnswers,
  childProcesses,
  masterMetric,
  masterPid,
  probe,
  type StoreLeader,
  type StorePod,
  startStoreLeader,
  startStoreMember,
} from '../support/store-program.ts';
import { waitFor } from '../support/wait.ts';

const ns = 'store-program';
const MiB = 1 << 20;
const segmentBytes = 64 * MiB;
const shortTimings = ['--lease-duration-ms=4000', '--renew-deadline-ms=3000', '--retry-period-ms=500'];

let client: KubeClient;
const logDir = mkdtempSync(join(tmpdir(), 'kvpool-store-program-'));
const processes: ManagedProcess[] = [];
const recorders: LeaseRecorder[] = [];
const addressBlock = 100 + (process.pid % 150);
let lastHost = 0;

function newPod(prefix: string): StorePod {
  lastHost += 1;
  return { name: uniqueName(prefix), namespace: ns, ip: `127.60.${addressBlock}.${lastHost}` };
}

async function leaderOn(pod: StorePod, flags: string[], masterArgs: string[] = []): Promise<StoreLeader> {
  const leader = await startStoreLeader({ pod, flags, masterArgs, logDir });
  processes.push(leader.process);
  return leader;
}

function electionFlags(lease: string, timings: string[] = []): string[] {
  return ['--election=Kubernetes', `--lease=${ns}/${lease}`, ...timings];
}

function recordLease(lease: string): LeaseRecorder {
  const recorder = LeaseRecorder.start(client, ns, lease);
  recorders.push(recorder);
  return recorder;
}

function waitReady(leader: StoreLeader, timeoutMs = 30_000) {
  return waitFor(async () => ((await probe(leader, '/readyz')).status === 200 ? true : undefined), {
    what: `${leader.pod.name} /readyz to answer 200 (logs: ${logDir})`,
    timeoutMs,
  });
}

function waitCapacity(leader: StoreLeader, bytes: number, timeoutMs = 60_000) {
  return waitFor(
    async () => ((await masterMetric(leader, 'master_total_capacity_bytes')) === bytes ? true : undefined),
    { what: `master_total_capacity_bytes ${bytes} on ${leader.identity} (logs: ${logDir})`, timeoutMs },
  );
}

function elected(leaders: StoreLeader[], recorder: LeaseRecorder): Promise<[StoreLeader, StoreLeader]> {
  return waitFor(
    () => {
      const winner = leaders.find((l) => l.identity === recorder.holder);
      return winner ? [winner, leaders.find((l) => l !== winner)!] : undefined;
    },
    { what: 'one leader to hold the Lease', timeoutMs: 30_000, intervalMs: 20 },
  );
}

function portOpen(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host, port }, () => resolve(!!socket.end()));
    socket.once('error', () => resolve(false));
  });
}

before(async () => {
  client = await testClient();
  await ensureNamespace(client, ns);
});

after(async () => {
  for (const p of [...processes].reverse()) await p.stop();
  for (const r of recorders) await r.stop();
  await client?.close();
  rmSync(logDir, { recursive: true, force: true });
});

describe('two leaders on one Lease, and a member that follows it', () => {
  const lease = uniqueName('store');
  let recorder: LeaseRecorder;
  let leaders: StoreLeader[];
  let leader: StoreLeader;
  let standby: StoreLeader;

  before(async () => {
    recorder = recordLease(lease);
    const flags = electionFlags(lease);
    leaders = [await leaderOn(newPod('leader-a'), flags), await leaderOn(newPod('leader-b'), flags)];
  });

  it('elects one holder (pod IP:rpc port), ready once its master serves; the standby runs no master', async () => {
    [leader, standby] = await elected(leaders, recorder);
    await waitReady(leader);
    // The standby reads the holder for its reason once per retry period.
    const reason = `standby: the Lease is held by ${leader.identity}`;
    const standbyProbe = await waitFor(
      async () => {
        const answer = await probe(standby, '/readyz');
        return answer.reason === reason ? answer : undefined;
      },
      { what: `the standby's /readyz to say "${reason}"`, timeoutMs: 5000 },
    );
    assert.equal(standbyProbe.status, 503);
    assert.deepEqual(childProcesses(standby.process.pid!), [], 'a standby starts no mooncake_master');
    assert.equal(await adminAnswers(standby), false);
    assert.equal((await probe(standby, '/healthz')).status, 200, 'a standby is alive');
    assert.match(
      (await probe(leader, '/readyz')).reason,
      /^leader of .*: master serving; Lease renewed \d+\.\d s ago/,
    );
  });

  it('mounts a member addressed by k8s://<ns>/<lease> on the leader, its REST port on its own address', async () => {
    const pod = newPod('member');
    const member = await startStoreMember({ pod, master: `k8s://${ns}/${lease}`, segmentBytes, logDir });
    processes.push(member.process);
    await waitCapacity(leader, segmentBytes);
    await waitFor(async () => ((await portOpen(pod.ip, member.restPort)) ? true : undefined), {
      what: 'the member REST port to open',
      timeoutMs: 30_000,
    });
    assert.equal(await portOpen('127.0.0.1', member.restPort), false, 'not bound to 0.0.0.0');
  });

  it('serves the master’s /metrics read-only on its metrics port; nothing else passes, and a standby answers 503', async () => {
    const scraped = await fetch(`${leader.metricsUrl}/metrics`);
    assert.equal(scraped.status, 200);
    assert.match(scraped.headers.get('content-type') ?? '', /^text\/plain; version=0\.0\.4/);
    assert.match(await scraped.text(), new RegExp(`^master_total_capacity_bytes ${segmentBytes}$`, 'm'));
    const refused = await Promise.all([
      fetch(`${leader.metricsUrl}/api/v1/tenant_quotas`).then((r) => r.status),
      fetch(`${leader.metricsUrl}/api/v1/remove_all?tenant_id=default`, { method: 'POST' }).then(
        (r) => r.status,
      ),
      fetch(`${leader.metricsUrl}/metrics`, { method: 'PUT', body: 'x' }).then((r) => r.status),
      fetch(`${leader.metricsUrl}/get_all_keys`).then((r) => r.status),
    ]);
    assert.deepEqual(refused, [404, 404, 405, 404]);
    assert.equal((await fetch(`${standby.metricsUrl}/metrics`)).status, 503, 'a standby runs no master');
  });

  it('on SIGTERM exits 0 and empties the Lease; the standby takes over and the member re-points', async () => {
    const t0 = performance.now();
    process.kill(leader.process.pid!, 'SIGTERM');
    assert.equal((await leader.process.exited).code, 0);
    const takenAt = await recorder.waitForHolder(standby.identity, t0, 10_000);
    const released = recorder.sightings.find((s) => s.at >= t0 && s.holder === '');
    assert.ok(released && released.at <= takenAt, 'the Lease is emptied before the standby takes it');
    const takeover = takenAt - t0;
    await waitReady(standby);
    const ready = performance.now() - t0;
    await waitCapacity(standby, segmentBytes);
    const repointed = performance.now() - t0;
    console.log(
      `SIGTERM: Lease taken after ${Math.round(takeover)} ms, standby ready after ${Math.round(ready)} ms, ` +
        `member capacity on the new master after ${Math.round(repointed)} ms`,
    );
    assert.ok(takeover < 3000, `the standby took the Lease after ${Math.round(takeover)} ms`);
  });
});

describe('a SIGKILLed leader (Lease 4 s, renew deadline 3 s, retry 0.5 s)', () => {
  const lease = uniqueName('store');
  const leaseDurationMs = 4000;
  const retryPeriodMs = 500;

  it('is replaced once the Lease expires, within leaseDuration + 2.4 × retryPeriod', async () => {
    const recorder = recordLease(lease);
    const flags = electionFlags(lease, shortTimings);
    const leaders = [await leaderOn(newPod('kill-a'), flags), await leaderOn(newPod('kill-b'), flags)];
    const [leader, standby] = await elected(leaders, recorder);
    await waitReady(leader);
    const t0 = performance.now();
    leader.process.signal('SIGKILL');
    const takeover = (await recorder.waitForHolder(standby.identity, t0, 20_000)) - t0;
    await waitReady(standby);
    const ready = performance.now() - t0;
    console.log(
      `SIGKILL: Lease taken after ${Math.round(takeover)} ms, standby ready after ${Math.round(ready)} ms`,
    );
    // client-go semantics: the standby counts leaseDuration from when it saw the last renewal, which its
    // jittered poll (up to 1.2 × retryPeriod) may see late, and it tries again up to 1.2 × retryPeriod
    // after expiry; 200 ms covers the API round trips.
    const latest = leaseDurationMs + 2 * 1.2 * retryPeriodMs + 200;
    const earliest = leaseDurationMs - retryPeriodMs - 200;
    assert.ok(takeover <= latest, `the standby took the Lease after ${Math.round(takeover)} ms`);
    assert.ok(
      takeover >= earliest,
      `the standby waited for the Lease to expire (${Math.round(takeover)} ms)`,
    );
  });
});

describe('a leader whose Lease another holder takes', () => {
  it('kills its master within a retry period or so, turns unready and campaigns again', async () => {
    const lease = uniqueName('store');
    const leader = await leaderOn(newPod('usurped'), electionFlags(lease, shortTimings));
    await waitReady(leader);
    const pid = masterPid(leader);
    assert.ok(pid, 'the leader runs a master');
    const t0 = performance.now();
    await takeLease(client, ns, lease, '127.60.0.1:50051');
    await waitFor(() => (masterPid(leader) === undefined ? true : undefined), {
      what: 'the master to be killed',
      timeoutMs: 5000,
      intervalMs: 20,
    });
    const elapsed = performance.now() - t0;
    console.log(`taken Lease: master killed after ${Math.round(elapsed)} ms`);
    assert.ok(elapsed < 500 + 1000, `killed after ${Math.round(elapsed)} ms`);
    assert.equal(await adminAnswers(leader), false, 'its master no longer answers');
    // Until the rival's record expires (4 s), the replica waits as a standby.
    const reason = 'standby: the Lease is held by 127.60.0.1:50051';
    const answer = await waitFor(
      async () => {
        const a = await probe(leader, '/readyz');
        return a.reason === reason ? a : undefined;
      },
      { what: `/readyz to say "${reason}"`, timeoutMs: 2000, intervalMs: 50 },
    );
    assert.equal(answer.status, 503);
    assert.equal(leader.process.exit, undefined, 'the program keeps running, as a standby');
  });
});

describe('a leader the Lease asks to step down (a rollout or a drain)', () => {
  it('stops its master, hands the Lease to the standby and stays out while named', async () => {
    const lease = uniqueName('store');
    const recorder = recordLease(lease);
    const flags = electionFlags(lease, shortTimings);
    const leaders = [await leaderOn(newPod('step-a'), flags), await leaderOn(newPod('step-b'), flags)];
    const [leader, standby] = await elected(leaders, recorder);
    await waitReady(leader);
    const t0 = performance.now();
    await client.mergePatch(leaseRef(ns, lease), {
      metadata: { annotations: { 'kvcache.gpustack.ai/step-down': `${leader.pod.name},another-pod` } },
    });
    const takenAt = await recorder.waitForHolder(standby.identity, t0, 10_000);
    console.log(`step-down: the standby holds the Lease ${Math.round(takenAt - t0)} ms after the request`);
    assert.equal(masterPid(leader), undefined, 'the old leader runs no master');
    assert.ok(
      recorder.sightings.some((s) => s.at >= t0 && s.at <= takenAt && s.holder === ''),
      'the old leader emptied the holder',
    );
    await waitReady(standby);
    const answer = await probe(leader, '/readyz');
    assert.equal(answer.status, 503);
    assert.match(answer.reason, /^stepped down: the Lease asks this Pod to hand over/);
    assert.equal(leader.process.exit, undefined, 'it keeps running, out of the election');
    await client.mergePatch(leaseRef(ns, lease), {
      metadata: { annotations: { 'kvcache.gpustack.ai/step-down': null } },
    });
    await waitFor(
      async () =>
        (await probe(leader, '/readyz')).reason === `standby: the Lease is held by ${standby.identity}`
          ? true
          : undefined,
      { what: 'the old leader to campaign again as a standby once no longer named', timeoutMs: 5000 },
    );
  });
});

describe('tenant policy seeding', () => {
  const tenancy = (file: string) => ['-enable_multi_tenants=true', `-tenant_quota_connector_uri=${file}`];

  it('starts the master with the seeded ledger', async () => {
    const dir = mkdtempSync(join(logDir, 'policy-'));
    const seed = join(dir, 'seed.yaml');
    const file = join(dir, 'policy.yaml');
    writeFileSync(seed, 'version: 1\ntenants:\n  - name: team-a\n    quota: 33554432\n');
    const flags = ['--election=None', `--policy-seed=${seed}`, `--policy-file=${file}`];
    const leader = await leaderOn(newPod('seeded'), flags, tenancy(file));
    await waitReady(leader);
    const sample = 'mooncake_tenant_quota_requested_bytes{tenant_id="team-a"}';
    await waitFor(async () => ((await masterMetric(leader, sample)) === 33554432 ? true : undefined), {
      what: `${sample} 33554432`,
      timeoutMs: 15_000,
    });
    assert.equal(readFileSync(file, 'utf8'), readFileSync(seed, 'utf8'));
  });

  it('starts the master with an empty ledger when there is no seed', async () => {
    const dir = mkdtempSync(join(logDir, 'policy-'));
    const file = join(dir, 'policy.yaml');
    const flags = ['--election=None', `--policy-seed=${join(dir, 'absent.yaml')}`, `--policy-file=${file}`];
    const leader = await leaderOn(newPod('unseeded'), flags, tenancy(file));
    await waitReady(leader);
    assert.equal(readFileSync(file, 'utf8'), emptyPolicy);
    const metrics = await (await fetch(`${leader.adminUrl}/metrics`)).text();
    assert.doesNotMatch(metrics, /^mooncake_tenant_quota_requested_bytes\{/m, 'no tenant in the ledger');
  });

  it('exits non-zero without a master, and releases the Lease, when the seed cannot be read', async () => {
    const lease = uniqueName('store');
    const dir = mkdtempSync(join(logDir, 'policy-'));
    const seed = join(dir, 'seed.yaml');
    mkdirSync(seed);
    const file = join(dir, 'policy.yaml');
    const flags = [...electionFlags(lease), `--policy-seed=${seed}`, `--policy-file=${file}`];
    const leader = await leaderOn(newPod('bad-seed'), flags, tenancy(file));
    const exit = await leader.process.exited;
    assert.notEqual(exit.code, 0);
    assert.equal(await adminAnswers(leader), false, 'no master was started');
    // Only a winner creates the Lease; a released one names no holder.
    const held = await client.get<KubeObject<Lease>>(leaseRef(ns, lease));
    assert.equal(held.spec?.holderIdentity, '', 'it won the Lease, then released it');
  });
});

describe('--election=None', () => {
  it('creates no Lease and is ready once the master serves', async () => {
    const lease = uniqueName('store');
    const leader = await leaderOn(newPod('unelected'), ['--election=None', `--lease=${ns}/${lease}`]);
    // An elected leader creates its Lease before it starts the master: a serving master is the evidence.
    await waitReady(leader);
    assert.equal(await client.find(leaseRef(ns, lease)), undefined, 'no Lease');
  });
});
