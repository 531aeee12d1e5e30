// Replicated metadata on the local cluster's real nodes (decision 50): a backend with
// electionBackend Etcd (three etcd members the operator runs, with TLS and a volume each, two leader
// replicas, two members) keeps every object in memory through a SIGKILL of the serving master, keeps
// its tenant ledger, and loses no object through a rolling store upgrade (the leaders hand over, then
// each member is drained before it is recreated). The doctor rows of replicated metadata are made for
// real here: a standby gone, an etcd without its quorum.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import type { Pod as CorePod } from 'kubernetes-types/core/v1.js';
import { buildImages } from '../../images/build.ts';
import { descendants, processTable } from '../../local/process-tree.ts';
import type { KVCacheBackend } from '../../src/api/types.ts';
import type { KubeObject } from '../../src/kube/object.ts';
import type { DoctorReport } from '../../src/kubectl-kvpool/doctor.ts';
import { binding, group, managedBackend, pool } from '../builders/index.ts';
import { conditionOf, type E2ECluster, startE2ECluster } from '../support/local-cluster.ts';
import { runStoreClient } from '../support/store-client.ts';
import { sha256 } from '../support/tier-files.ts';
import { waitFor } from '../support/wait.ts';

const ns = 'gpustack-system';
const name = 'replicated';
const team = 'team-a';
const objectBytes = 128 * 1024;
const objectCount = 200;
const keyOf = (i: number) => `kept-${String(i).padStart(4, '0')}`;
type Pod = KubeObject<CorePod>;
/** The taint that keeps new Pods off the nodes while the quorum test holds members down. */
const hold = 'kvpool.test/hold=true';

const replicatedBackend = () =>
  managedBackend(
    name,
    {
      leader: {
        replicas: 2,
        electionBackend: 'Etcd',
        // An object read within its lease cannot move: a short one keeps the upgrade's drains short.
        extraArgs: ['-default_kv_lease_ttl=10s'],
      },
      members: [group({ capacityPerMember: '256Mi' })],
    },
    { type: 'Mooncake' },
  );

describe('a store whose masters replicate their index through etcd', () => {
  let e: E2ECluster;
  const written = new Map<string, string>();
  const client = () => e.cluster.client;
  const pods = async (component: string) =>
    (
      await client().list<Pod>(
        { apiVersion: 'v1', kind: 'Pod', namespace: ns },
        { labelSelector: `app.kubernetes.io/instance=${name},app.kubernetes.io/component=${component}` },
      )
    ).items.filter((p) => !p.metadata.deletionTimestamp);
  const ready = (p: Pod) => p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True');
  /** The ready leader Pod: the one whose master serves (readiness follows its /health). */
  const serving = () =>
    waitFor(async () => (await pods('leader')).find(ready), { what: 'a serving leader', timeoutMs: 120_000 });
  /** What a failed wait shows of the backend: its phase and each condition in one line. */
  const brief = (b: KVCacheBackend) => ({
    phase: b.status?.phase,
    conditions: b.status?.conditions?.map((c) => `${c.type}=${c.status}/${c.reason}: ${c.message}`),
  });
  const seen = new Set<string>();
  /** Waits on the backend, printing each new RolloutComplete message on the way (what a rollout did). */
  const untilBackend = async (what: string, test: (b: KVCacheBackend) => boolean, timeoutMs = 300_000) => {
    let last: KVCacheBackend | undefined;
    try {
      return await waitFor(
        async () => {
          last = await e.backend(name);
          const rollout = conditionOf(last, 'RolloutComplete')?.message;
          if (rollout && !seen.has(rollout)) {
            seen.add(rollout);
            console.log(`  rollout: ${rollout}`);
          }
          return last;
        },
        { what: `${name}: ${what}`, until: test, timeoutMs, intervalMs: 500 },
      );
    } catch (err) {
      throw new Error(
        `${(err as Error).message.split('; last seen')[0]}; last: ${JSON.stringify(last && brief(last))}`,
      );
    }
  };
  const store = (ip: string) => ({ master: `${ip}:50051`, host: e.cluster.hostAddress, tenant: 'default' });
  const ledger = async (ip: string) =>
    (await fetch(`http://${ip}:9003/api/v1/tenant_quotas`, { signal: AbortSignal.timeout(3000) })).json();
  /** Reads every key written through the serving master; the keys that read back their own bytes. */
  const readBack = async () => {
    const leader = await serving();
    const keys = [...written.keys()];
    const got = await runStoreClient(
      store(leader.status!.podIP!),
      keys.map((key) => ({ op: 'get' as const, key })),
    );
    const same = keys.filter((k, i) => {
      const r = got[i]!;
      return 'data' in r && r.data.length > 0 && sha256(r.data) === written.get(k);
    });
    const other = keys.filter((k, i) => {
      const r = got[i]!;
      return 'data' in r && r.data.length > 0 && sha256(r.data) !== written.get(k);
    });
    assert.deepEqual(other, [], 'keys that read back bytes not their own');
    return same;
  };

  /** `kubectl kvpool doctor -o json` as a user runs it (it exits 1 when it finds something). */
  const doctorReport = async (): Promise<DoctorReport> => {
    const plugin = join(e.cluster.root, 'bin', 'kubectl-kvpool');
    const out = await promisify(execFile)(plugin, ['doctor', '-o', 'json'], {
      env: { ...process.env, KUBECONFIG: e.cluster.kubeconfigPath },
      maxBuffer: 16 << 20,
    }).catch((err: { stdout?: string }) => ({ stdout: err.stdout ?? '{}' }));
    return JSON.parse(out.stdout) as DoctorReport;
  };

  before(async () => {
    e = await startE2ECluster();
    await e.kubectl(['create', 'namespace', team]);
    await client().create(replicatedBackend());
    await client().create(pool(name, { backend: name, total: '512Mi' }));
    await client().create(binding(team, team, { pool: name, ceiling: '256Mi', domain: null }));
  });
  after(() => e?.stop());

  it('runs its etcd and two masters: one serves, the other follows the OpLog', async () => {
    const b = await untilBackend(
      'Ready, a standby following the OpLog, etcd healthy',
      (x) =>
        x.status?.phase === 'Ready' &&
        conditionOf(x, 'MetadataReplicated')?.status === 'True' &&
        conditionOf(x, 'EtcdAvailable')?.reason === 'Healthy',
    );
    console.log(`MetadataReplicated: ${conditionOf(b, 'MetadataReplicated')?.message}`);
    assert.deepEqual(b.status?.replication?.etcdMembers, 3);
    assert.match(conditionOf(b, 'ElectionObserved')!.message, /^etcd names \S+:50051 as the serving master/);
    const deployment = await e.kubectl([
      '-n',
      ns,
      'get',
      'deployment',
      `${name}-leader`,
      '-o',
      'jsonpath={.spec.replicas}/{.status.readyReplicas}',
    ]);
    assert.equal(deployment, '2/1', 'the leader Deployment shows 2 desired, 1 ready');
    const claims = await e.kubectl([
      '-n',
      ns,
      'get',
      'pvc',
      '-l',
      `app.kubernetes.io/instance=${name}`,
      '-o',
      'name',
    ]);
    assert.equal(claims.trim().split('\n').length, 3, 'one volume per etcd member');
  });

  it('serves every object with its own bytes within 20 s of a SIGKILL of the serving master, the ledger kept', async () => {
    const leader = await serving();
    const ip = leader.status!.podIP!;
    const payloads = Array.from(
      { length: objectCount },
      (_, i) => [keyOf(i), randomBytes(objectBytes)] as const,
    );
    for (const [key, data] of payloads) written.set(key, sha256(data));
    const puts = await runStoreClient(
      store(ip),
      payloads.map(([key, data]) => ({ op: 'put' as const, key, data })),
    );
    assert.equal(puts.filter((p) => 'rc' in p && p.rc === 0).length, objectCount);
    const before = await ledger(ip);
    await untilBackend(
      'the standby caught up',
      (x) => (x.status?.replication?.lagEntries ?? 1) === 0,
      60_000,
    );
    // SIGKILL every process of the serving leader's container, and remove its Pod at once (a node lost).
    const roots = await e.cluster.node(leader.spec!.nodeName!).containerPids(ns, leader.metadata.name!);
    const table = processTable();
    const pids = roots.flatMap((p) => [p, ...descendants(p, table)]);
    assert.ok(pids.some((p) => table.comm.get(p) === 'mooncake_master'));
    const killedAt = Date.now();
    for (const pid of pids) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // Gone with its parent.
      }
    }
    await client().request('DELETE', `/api/v1/namespaces/${ns}/pods/${leader.metadata.name}`, {
      body: { gracePeriodSeconds: 0 },
    });
    const back = await waitFor(
      async () => {
        const kept = await readBack().catch(() => []);
        return kept.length >= objectCount * 0.99 ? kept : undefined;
      },
      { what: '99% of the objects back', timeoutMs: 60_000, intervalMs: 500 },
    );
    const allBackMs = Date.now() - killedAt;
    console.log(
      `${back.length} of ${objectCount} objects back, byte-identical, ${allBackMs} ms after the kill`,
    );
    assert.ok(allBackMs <= 20_000, `back ${allBackMs} ms after the kill`);
    const now = (await serving()).status!.podIP!;
    assert.notEqual(now, ip);
    assert.deepEqual(await ledger(now), before, 'the new master holds the ledger the old one had');
    const b = await untilBackend(
      'lastFailover with the memory figures',
      (x) => x.status?.lastFailover?.dramKeysAfter !== undefined,
    );
    const f = b.status!.lastFailover!;
    console.log(`status.lastFailover: ${JSON.stringify(f)}`);
    assert.equal(f.dramKeysAfter, f.dramKeysBefore, 'the new master reports the objects the old one had');
  });

  it('says when no standby follows and when etcd loses its quorum, serves no wrong byte meanwhile, and recovers every object', async () => {
    await untilBackend('a standby again', (x) => conditionOf(x, 'MetadataReplicated')?.status === 'True');
    // Nothing new may be scheduled, so the Pods deleted below stay pending: a taint, not a cordon (a
    // cordon is a drain's first step, and hands leadership over on its own).
    for (const node of e.cluster.nodes) await e.kubectl(['taint', 'nodes', node, `${hold}:NoSchedule`]);
    try {
      const leader = await serving();
      const standby = (await pods('leader')).find((p) => p.metadata.name !== leader.metadata.name)!;
      await e.kubectl(['-n', ns, 'delete', 'pod', standby.metadata.name!, '--wait=false']);
      await untilBackend(
        'MetadataReplicated False',
        (x) => conditionOf(x, 'MetadataReplicated')?.reason === 'NoStandby',
        120_000,
      );
      const members = await pods('etcd');
      for (const m of members.slice(0, 2))
        await e.kubectl(['-n', ns, 'delete', 'pod', m.metadata.name!, '--wait=false']);
      const lostAt = Date.now();
      const b = await untilBackend(
        'EtcdAvailable False',
        (x) => conditionOf(x, 'EtcdAvailable')?.reason === 'QuorumLost',
        120_000,
      );
      console.log(`quorum lost: ${conditionOf(b, 'EtcdAvailable')?.message}`);
      const doctor = await doctorReport();
      const found = (id: string) =>
        doctor.checks.find((c) => c.id === id)?.findings.some((f) => f.object === `KVCacheBackend/${name}`);
      assert.ok(found('etcd-quorum'), 'doctor: etcd-quorum');
      // Without a quorum the serving master loses its etcd lease and steps down: nothing serves, and
      // nothing wrong is served. Measured: how long it kept serving.
      const stopped = await waitFor(
        async () => ((await pods('leader')).some(ready) ? undefined : Date.now()),
        {
          what: 'the master stepping down without etcd',
          timeoutMs: 60_000,
          intervalMs: 250,
        },
      ).catch(() => undefined);
      console.log(
        `without a quorum the master ${stopped ? `stopped serving ${stopped - lostAt} ms after two members went` : 'kept serving for 60 s'}`,
      );
    } finally {
      for (const node of e.cluster.nodes) await e.kubectl(['taint', 'nodes', node, `${hold}:NoSchedule-`]);
    }
    await untilBackend(
      'Ready again with its etcd and a standby',
      (x) =>
        x.status?.phase === 'Ready' &&
        conditionOf(x, 'EtcdAvailable')?.reason === 'Healthy' &&
        conditionOf(x, 'MetadataReplicated')?.status === 'True',
    );
    const kept = await readBack();
    console.log(`after the quorum came back: ${kept.length} of ${written.size} objects byte-identical`);
    assert.equal(kept.length, written.size);
  });

  it('keeps serving every object with one etcd member SIGKILLed, and takes new ones', async () => {
    const leader = await serving();
    const [member] = await pods('etcd');
    const roots = await e.cluster.node(member!.spec!.nodeName!).containerPids(ns, member!.metadata.name!);
    const table = processTable();
    for (const pid of roots.flatMap((p) => [p, ...descendants(p, table)])) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // Gone with its parent.
      }
    }
    const payloads = Array.from({ length: 20 }, (_, i) => [`during-${i}`, randomBytes(objectBytes)] as const);
    const puts = await runStoreClient(
      store(leader.status!.podIP!),
      payloads.map(([key, data]) => ({ op: 'put' as const, key, data })),
    );
    assert.equal(
      puts.filter((p) => 'rc' in p && p.rc === 0).length,
      payloads.length,
      'puts while a member is down',
    );
    for (const [key, data] of payloads) written.set(key, sha256(data));
    assert.equal((await serving()).metadata.name, leader.metadata.name, 'the same master serves throughout');
    const kept = await readBack();
    console.log(
      `one etcd member killed: ${kept.length} of ${written.size} objects byte-identical, the same master serving`,
    );
    assert.equal(kept.length, written.size);
    await untilBackend('etcd whole again', (x) => conditionOf(x, 'EtcdAvailable')?.reason === 'Healthy');
  });

  it('loses no object in a rolling store upgrade: the leaders hand over, each member is drained first', async () => {
    const [image] = await buildImages(['kvpool-store']);
    const next = `${e.cluster.registry.address}/kvpool/kvpool-store:upgrade`;
    await promisify(execFile)(join(e.cluster.root, 'bin', 'skopeo'), [
      'copy',
      `oci-archive:${image!.archive}`,
      `docker://${next}`,
    ]);
    const startedAt = Date.now();
    await e.kubectl(['patch', 'kvcb', name, '--type=merge', '-p', JSON.stringify({ spec: { image: next } })]);
    await untilBackend(
      'every Pod on the new image, RolloutComplete',
      (x) =>
        x.status?.phase === 'Ready' &&
        x.status.conditions?.some(
          (c) =>
            c.type === 'RolloutComplete' &&
            c.reason === 'Complete' &&
            c.observedGeneration === x.metadata.generation,
        ) === true,
      900_000,
    );
    for (const component of ['leader', 'member-0'])
      for (const p of await pods(component))
        assert.equal(p.spec?.containers[0]?.image, next, `${p.metadata.name} runs the new image`);
    const kept = await readBack();
    console.log(
      `rolling upgrade: ${Math.round((Date.now() - startedAt) / 1000)} s; ${kept.length} of ${written.size} objects byte-identical`,
    );
    assert.equal(kept.length, written.size, 'no object lost');
  });
});
