// A node that dies and comes back, on the local cluster's real nodes. "Dies" means what a machine that
// loses power does: every process of the node is SIGKILLed at once, the kubelet, containerd and
// kube-proxy, the containerd shims and every container they ran (LocalNode.kill: its whole cgroup),
// and its /run is gone with its mount namespace. "Comes back" means a reboot: the same processes
// start again with the same node name and the same state directory (/var/lib of the node, where
// containerd and the kubelet keep their state), and the node registers as itself.
//
// The backend has a member on every node and two leader replicas (one per node). First the node killed
// is the one that does not hold the serving leader, so what is lost is one member (and a standby);
// then the one that does, so the standby on the other node takes over (with an empty master, as in
// any failover). docs/failover-and-sizing.md ("A node that dies and comes back") has the figures.

import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import type { Lease } from 'kubernetes-types/coordination/v1.js';
import type { Pod as CorePod, Node } from 'kubernetes-types/core/v1.js';
import type { KVCacheBackend, KVCachePoolBinding } from '../../src/api/types.ts';
import type { KubeObject } from '../../src/kube/object.ts';
import { backend, binding, group, pool, v1 } from '../builders/index.ts';
import { type E2ECluster, startE2ECluster } from '../support/local-cluster.ts';
import { runStoreClient } from '../support/store-client.ts';
import { sha256 } from '../support/tier-files.ts';
import { waitFor } from '../support/wait.ts';

const ns = 'gpustack-system';
const name = 'node-death';
const team = 'team-a';
const adminPort = 9003;
const objectBytes = 1024 * 1024;
const objectCount = 40;
/** Two members of 128Mi; one left while a node is gone. */
const fullCapacity = '256Mi';
const oneMember = '128Mi';
/** Below one member's segment, so the master never has to cut it. */
const ceiling = '64Mi';
type Pod = KubeObject<CorePod>;

/** Whether `pid` runs: it exists and is not a zombie (a killed process whose parent has not reaped it). */
function running(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return !['Z', 'X'].includes(stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3));
  } catch {
    return false;
  }
}

/** Two leader replicas, spread one per node: the serving leader and a standby on the other node. */
const nodeDeathBackend = () =>
  backend(name, { leaderReplicas: 2, groups: [group({ capacityPerMember: oneMember })] });

/** One reading of everything the test watches while the node is gone. */
interface Sample {
  at: number;
  nodeReady?: string;
  phase?: string;
  phaseMessage?: string;
  capacity?: string;
  membersMounted?: string;
  rows: string[];
  /** Every condition message and the phase message, for the node's name. */
  text: string;
  grant?: string;
  bindingPhase?: string;
  memberReady?: string;
}

describe('a node that dies and comes back', () => {
  let e: E2ECluster;
  /** The node killed, while it is down (so after() can bring it back if a test failed). */
  let down: string | undefined;
  const client = () => e.cluster.client;
  const node = (n: string) => client().get<KubeObject<Node>>({ apiVersion: 'v1', kind: 'Node', name: n });
  const nodeReady = async (n: string) =>
    (await node(n)).status?.conditions?.find((c) => c.type === 'Ready')?.status;
  const theBinding = () =>
    client().get<KVCachePoolBinding>({
      apiVersion: v1,
      kind: 'KVCachePoolBinding',
      namespace: team,
      name: team,
    });
  const memberPods = async () =>
    (
      await client().list<Pod>(
        { apiVersion: 'v1', kind: 'Pod', namespace: ns },
        { labelSelector: `app.kubernetes.io/instance=${name},app.kubernetes.io/component=member-0` },
      )
    ).items;
  const memberOn = async (n: string) => (await memberPods()).find((p) => p.spec?.nodeName === n);
  const podReady = (p: Pod | undefined) => p?.status?.conditions?.find((c) => c.type === 'Ready')?.status;
  const holder = () =>
    waitFor(
      async () =>
        (
          await client().find<KubeObject<Lease>>({
            apiVersion: 'coordination.k8s.io/v1',
            kind: 'Lease',
            namespace: ns,
            name: `${name}-leader`,
          })
        )?.spec?.holderIdentity || undefined,
      { what: 'the leader Lease’s holder' },
    );
  const store = (master: string) => ({ master, host: e.cluster.hostAddress, tenant: 'default' });
  const untilBackend = (what: string, test: (b: KVCacheBackend) => boolean, timeoutMs = 180_000) =>
    waitFor(() => e.backend(name), { what: `${name}: ${what}`, until: test, timeoutMs, intervalMs: 250 });
  const rowNodes = (b: KVCacheBackend) => (b.status?.members ?? []).map((m) => m.nodeName ?? '?').sort();
  const untilWhole = (what: string) =>
    untilBackend(
      `Ready with ${fullCapacity} and a row on each node ${what}`,
      (b) =>
        b.status?.phase === 'Ready' &&
        b.status.capacity?.total === fullCapacity &&
        rowNodes(b).join() === [...e.cluster.nodes].sort().join(),
    );
  /** The Lease holder's address and its Pod. */
  const servingLeader = async () => {
    const master = await holder();
    const pod = (
      await client().list<Pod>(
        { apiVersion: 'v1', kind: 'Pod', namespace: ns },
        { labelSelector: `app.kubernetes.io/instance=${name},app.kubernetes.io/component=leader` },
      )
    ).items.find((p) => master.startsWith(`${p.status?.podIP}:`));
    assert.ok(pod?.spec?.nodeName, `the Pod of the Lease holder ${master}`);
    return { master, pod, node: pod.spec.nodeName };
  };
  /** The operator replica that leads (its Lease), and its node. */
  const operatorLeader = async () => {
    const holderName = (
      await client().find<KubeObject<Lease>>({
        apiVersion: 'coordination.k8s.io/v1',
        kind: 'Lease',
        namespace: e.cluster.namespace,
        name: 'kvpool-operator',
      })
    )?.spec?.holderIdentity;
    const pod = (
      await client().list<Pod>({ apiVersion: 'v1', kind: 'Pod', namespace: e.cluster.namespace })
    ).items.find((p) => holderName?.includes(p.metadata.name!));
    return `${holderName} on ${pod?.spec?.nodeName ?? 'a node not found'}`;
  };

  async function sampleOnce(victim: string): Promise<Sample> {
    const [ready, b, bd, member] = await Promise.all([
      nodeReady(victim).catch(() => 'unread'),
      e.backend(name).catch(() => undefined),
      theBinding().catch(() => undefined),
      memberOn(victim).catch(() => undefined),
    ]);
    const conditions = b?.status?.conditions ?? [];
    const mm = conditions.find((c) => c.type === 'MembersMounted');
    return {
      at: Date.now(),
      nodeReady: ready,
      phase: b?.status?.phase,
      phaseMessage: b?.status?.phaseMessage,
      capacity: b?.status?.capacity?.total?.toString(),
      membersMounted: mm && `${mm.status}/${mm.reason}: ${mm.message}`,
      rows: b ? (b.status?.members ?? []).map((m) => `${m.nodeName ?? '?'}:${m.state ?? '?'}`) : [],
      text: [b?.status?.phaseMessage ?? '', ...conditions.map((c) => c.message)].join('\n'),
      grant: bd?.status?.effectiveQuota?.toString(),
      bindingPhase: bd?.status?.phase,
      memberReady: podReady(member),
    };
  }

  /** Samples every 250 ms until stop(); prints each change, with the time since `from`. */
  function watch(victim: string, from: number) {
    const samples: Sample[] = [];
    let on = true;
    let shown = '';
    const running = (async () => {
      while (on) {
        const s = await sampleOnce(victim);
        samples.push(s);
        const { at, text, ...shape } = s;
        const line = JSON.stringify(shape);
        if (line !== shown) console.log(`+${at - from} ms ${line}`);
        shown = line;
        await new Promise((r) => setTimeout(r, 250));
      }
    })();
    return {
      samples,
      async stop() {
        on = false;
        await running;
        return samples;
      },
    };
  }

  before(async () => {
    e = await startE2ECluster();
    await e.kubectl(['create', 'namespace', team]);
    await client().create(nodeDeathBackend());
    await client().create(pool(name, { backend: name, total: fullCapacity }));
    await client().create(binding(team, team, { pool: name, ceiling, domain: null }));
  });
  // The cluster ends as it started: every node Ready (a node a failed test left down is started again),
  // then stopped whole. The Binding is not deleted: its domain holds objects, which a purge removes
  // only once the reads' 5-minute leases end (decision 28), longer than this file may take.
  after(async () => {
    try {
      if (down) await e.cluster.nodeSet.startNode(e.cluster.node(down));
    } finally {
      await e?.stop();
    }
  });

  it('loses the dead member’s objects only, says so in the status, and is whole again once the node returns', async () => {
    const ready = await untilWhole('');
    await waitFor(theBinding, {
      what: `the Binding Ready with its ${ceiling} granted`,
      until: (b) => b.status?.phase === 'Ready' && b.status.effectiveQuota === ceiling,
      timeoutMs: 120_000,
    });
    const { master, pod: leaderPod, node: survivor } = await servingLeader();
    const victim = e.cluster.nodes.find((n) => n !== survivor)!;
    console.log(
      `serving leader ${leaderPod.metadata.name} on ${survivor}; the node to die: ${victim}; the leading operator replica: ${await operatorLeader()}`,
    );
    assert.equal(ready.status?.members?.length, 2);

    // Objects through the real client, then where the master says each lives (its member's address).
    const payloads = new Map(
      Array.from({ length: objectCount }, (_, i) => [
        `nd-${String(i).padStart(3, '0')}`,
        randomBytes(objectBytes),
      ]),
    );
    const sums = new Map([...payloads].map(([k, d]) => [k, sha256(d)]));
    const puts = await runStoreClient(
      store(master),
      [...payloads].map(([key, data]) => ({ op: 'put' as const, key, data })),
    );
    assert.equal(puts.filter((p) => 'rc' in p && p.rc === 0).length, objectCount, JSON.stringify(puts));
    payloads.clear();
    const members = await memberPods();
    const ipOf = new Map(members.map((p) => [p.status!.podIP!, p.spec!.nodeName!]));
    const home = new Map<string, string>();
    const ip = master.split(':')[0];
    for (const key of sums.keys()) {
      const where = await (await fetch(`http://${ip}:${adminPort}/query_key?key=${key}`)).text();
      const at = [...ipOf].find(([podIp]) => where.includes(`"${podIp}:`));
      assert.ok(at, `the master places ${key}: ${where.slice(0, 300)}`);
      home.set(key, at[1]);
    }
    const onSurvivor = [...home].filter(([, n]) => n === survivor).map(([k]) => k);
    const onVictim = [...home].filter(([, n]) => n === victim).map(([k]) => k);
    console.log(
      `${objectCount} objects of ${objectBytes} bytes: ${onSurvivor.length} on ${survivor}, ${onVictim.length} on ${victim}`,
    );
    assert.ok(onSurvivor.length > 0 && onVictim.length > 0, 'each node holds some objects');
    /** Reads `keys`; returns those that read back, each checked byte for byte. */
    const readBack = async (keys: string[]) => {
      const results = await runStoreClient(
        store(master),
        keys.map((key) => ({ op: 'get' as const, key })),
      );
      const hits: string[] = [];
      for (const [i, r] of results.entries()) {
        if (!('data' in r) || r.data.length === 0) continue;
        assert.equal(sha256(r.data), sums.get(keys[i]!), `${keys[i]} read back other bytes`);
        hits.push(keys[i]!);
      }
      return hits;
    };

    const victimMember = (await memberOn(victim))!;
    const memberPids = await e.cluster.node(victim).containerPids(ns, victimMember.metadata.name!);
    assert.ok(memberPids.length > 0, 'the member’s container runs on the node');

    // The node dies.
    const killedAt = Date.now();
    const since = (at: number | undefined) => (at === undefined ? 'never' : `${at - killedAt} ms`);
    down = victim;
    await e.cluster.node(victim).kill();
    assert.deepEqual(memberPids.filter(running), [], 'the member’s processes died with the node');
    const watching = watch(victim, killedAt);
    let notReadyAt: number;
    let namedAt: number;
    let droppedAt: number;
    let named: KVCacheBackend;
    try {
      await waitFor(() => nodeReady(victim), {
        what: `${victim} NotReady`,
        until: (s) => s !== 'True',
        timeoutMs: 120_000,
        intervalMs: 200,
      });
      notReadyAt = Date.now();
      named = await untilBackend(`MembersMounted=False naming ${victim}`, (b) =>
        Boolean(
          b.status?.conditions?.some(
            (c) => c.type === 'MembersMounted' && c.status === 'False' && c.message.includes(victim),
          ),
        ),
      );
      namedAt = Date.now();
      // The master drops a member once it has not pinged for client_ttl (60 s, decision 28).
      await untilBackend(
        `capacity down to the surviving member (${oneMember}), no row on ${victim}`,
        (b) => b.status?.capacity?.total === oneMember && !rowNodes(b).includes(victim),
      );
      droppedAt = Date.now();
    } catch (err) {
      await watching.stop();
      throw err;
    }
    const namedCondition = named.status!.conditions!.find((c) => c.type === 'MembersMounted')!;
    console.log(
      `while down, first: phase ${named.status?.phase}, capacity ${named.status?.capacity?.total}, rows ${rowNodes(named).join(', ')}, MembersMounted=${namedCondition.status}/${namedCondition.reason}: ${namedCondition.message}`,
    );
    assert.equal(named.status?.phase, 'Degraded', 'a member lost with its node degrades the backend');
    let samples = [...watching.samples];
    const podNotReadyAt = samples.find((s) => s.at >= killedAt && s.memberReady !== 'True')?.at;

    // While it is gone: the survivor's objects read back, the dead member's are gone.
    const whileDown = await readBack([...sums.keys()]);
    const survivorBack = onSurvivor.filter((k) => whileDown.includes(k));
    const victimBack = onVictim.filter((k) => whileDown.includes(k));
    const gone = await e.backend(name);
    const goneCondition = gone.status?.conditions?.find((c) => c.type === 'MembersMounted');
    console.log(
      [
        `kill → ${victim} NotReady: ${since(notReadyAt)}; its member Pod not Ready: ${since(podNotReadyAt)}`,
        `kill → status names ${victim}: ${since(namedAt)}; capacity ${oneMember}: ${since(droppedAt)}`,
        `after the drop: phase ${gone.status?.phase}, capacity ${gone.status?.capacity?.total}, rows ${rowNodes(gone).join(', ')}, MembersMounted=${goneCondition?.status}/${goneCondition?.reason}`,
        `while down: ${survivorBack.length}/${onSurvivor.length} of ${survivor}'s objects read back byte-identical, ${victimBack.length}/${onVictim.length} of ${victim}'s`,
      ].join('\n'),
    );
    assert.deepEqual(survivorBack, onSurvivor, 'every object on the surviving node reads back');
    assert.deepEqual(victimBack, [], 'the dead member’s objects are lost with its memory');

    // The node comes back, as itself.
    const returnedAt = Date.now();
    let nodeBackAt: number;
    let whole: KVCacheBackend;
    let wholeAt: number;
    try {
      await e.cluster.nodeSet.startNode(e.cluster.node(victim));
      down = undefined;
      nodeBackAt = Date.now();
      whole = await untilWhole('again');
      wholeAt = Date.now();
    } finally {
      samples = await watching.stop();
    }
    const back = await waitFor(() => memberOn(victim), {
      what: `the member Pod on ${victim} Ready again`,
      until: (p) => podReady(p) === 'True',
    });
    const memberBackAt = Date.now();
    const grants = new Set(samples.map((s) => s.grant));
    const bindingPhases = new Set(samples.map((s) => s.bindingPhase));
    const afterReturn = await readBack([...sums.keys()]);
    console.log(
      [
        `return → ${victim} Ready: ${nodeBackAt - returnedAt} ms; return → backend Ready with ${fullCapacity}: ${wholeAt - returnedAt} ms; → its member Pod Ready: ${memberBackAt - returnedAt} ms`,
        `the member Pod on ${victim}: ${back?.metadata.uid === victimMember.metadata.uid ? 'the same Pod' : 'a new Pod'}, IP ${victimMember.status?.podIP} → ${back?.status?.podIP}`,
        `the Binding throughout: grants ${[...grants].join(', ')}, phases ${[...bindingPhases].join(', ')}`,
        `after the return: ${afterReturn.length}/${objectCount} objects read back (${onVictim.length} were lost with ${victim})`,
      ].join('\n'),
    );
    assert.equal(whole.status?.members?.length, 2);
    assert.deepEqual([...grants], [ceiling], 'the Binding keeps its grant throughout');
    assert.deepEqual([...bindingPhases], ['Ready'], 'the Binding stays Ready throughout');
    assert.deepEqual(afterReturn, onSurvivor, 'nothing that lived on the surviving node was lost');
    await waitFor(theBinding, {
      what: `the Binding Ready with ${ceiling} after the return`,
      until: (b) => b.status?.phase === 'Ready' && b.status.effectiveQuota === ceiling,
    });
  });

  it('fails over to the standby on the other node when the dead node held the serving leader, and is whole once it returns', async () => {
    await untilWhole('before the second kill');
    const { master, pod: oldLeader, node: victim } = await servingLeader();
    const survivor = e.cluster.nodes.find((n) => n !== victim)!;
    console.log(
      `serving leader ${oldLeader.metadata.name} on ${victim}, the node to die; the leading operator replica: ${await operatorLeader()}`,
    );
    const keys = Array.from({ length: 10 }, (_, i) => `nd-leader-${i}`);
    const puts = await runStoreClient(
      store(master),
      keys.map((key) => ({ op: 'put' as const, key, data: Buffer.from(`value of ${key}`) })),
    );
    assert.equal(puts.filter((p) => 'rc' in p && p.rc === 0).length, keys.length, JSON.stringify(puts));

    const killedAt = Date.now();
    const since = (at: number | undefined) => (at === undefined ? 'never' : `${at - killedAt} ms`);
    down = victim;
    await e.cluster.node(victim).kill();
    const watching = watch(victim, killedAt);
    let samples: Sample[];
    let takenAt: number;
    let servingAt: number;
    let newMaster: string;
    let returnedAt: number;
    let nodeBackAt: number;
    let wholeAt: number;
    try {
      newMaster = await waitFor(holder, {
        what: 'another leader replica holding the Lease',
        until: (h) => h !== master,
        timeoutMs: 120_000,
        intervalMs: 100,
      });
      takenAt = Date.now();
      const newIp = newMaster.split(':')[0]!;
      await untilBackend(
        `served by the new leader with the surviving member (${oneMember})`,
        (b) =>
          b.status?.conditions?.some(
            (c) => c.type === 'LeaderAvailable' && c.status === 'True' && c.message.includes(`${newIp}:`),
          ) === true &&
          b.status.capacity?.total === oneMember &&
          rowNodes(b).join() === survivor,
      );
      servingAt = Date.now();
      returnedAt = Date.now();
      await e.cluster.nodeSet.startNode(e.cluster.node(victim));
      down = undefined;
      nodeBackAt = Date.now();
      await untilWhole('again');
      wholeAt = Date.now();
    } finally {
      samples = await watching.stop();
    }
    const newLeader = await servingLeader();
    const notReadyAt = samples.find((s) => s.nodeReady !== undefined && s.nodeReady !== 'True')?.at;
    const hits = (
      await runStoreClient(
        store(newLeader.master),
        keys.map((key) => ({ op: 'get' as const, key })),
      )
    ).filter((r) => 'data' in r && r.data.length > 0);
    const grants = new Set(samples.map((s) => s.grant));
    console.log(
      [
        `kill → another replica holds the Lease (${newMaster}): ${since(takenAt)}; → the status reads it serving with ${oneMember}: ${since(servingAt)}; → ${victim} NotReady: ${since(notReadyAt)}`,
        `return → ${victim} Ready: ${nodeBackAt - returnedAt} ms; return → backend Ready with ${fullCapacity}: ${wholeAt - returnedAt} ms`,
        `the serving leader now: ${newLeader.pod.metadata.name} on ${newLeader.node}; the Binding's grants meanwhile: ${[...grants].join(', ')}`,
        `${hits.length}/${keys.length} objects written before the kill read back (a failover keeps nothing in memory)`,
      ].join('\n'),
    );
    assert.equal(newLeader.node, survivor, 'the standby on the other node serves');
    assert.equal(hits.length, 0, 'the new master starts empty');
    await waitFor(theBinding, {
      what: `the Binding Ready with ${ceiling} on the new master`,
      until: (b) => b.status?.phase === 'Ready' && b.status.effectiveQuota === ceiling,
    });
  });
});
