// Issue 24 on the local cluster's real nodes (decision 45): a write-through disk tier keeps its objects
// through a hard kill of the serving leader (the standby's new master learns them from the members),
// memory-only objects are lost, and a tier directory holding another backend's files is never
// re-registered into a new backend (refused, or emptied before the store mounts it).

import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, afterEach, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Lease } from 'kubernetes-types/coordination/v1.js';
import type { Pod as CorePod } from 'kubernetes-types/core/v1.js';
import { descendants, processTable } from '../../local/process-tree.ts';
import type { KVCacheBackend } from '../../src/api/types.ts';
import type { KubeObject } from '../../src/kube/object.ts';
import { parseQuantityBytes } from '../../src/vocabulary/quantity.ts';
import { tierBackend, tierPath } from '../builders/index.ts';
import { conditionOf, type E2ECluster, startE2ECluster } from '../support/local-cluster.ts';
import { masterFigures } from '../support/master-figures.ts';
import { runStoreClient } from '../support/store-client.ts';
import { keysOnTier, sha256, tierFiles, type Written } from '../support/tier-files.ts';
import { waitFor } from '../support/wait.ts';

const ns = 'gpustack-system';
const marker = '.kvpool-tier';
const objectBytes = 256 * 1024;
const objectCount = 160;
const keyPrefix = 'warm-';
const keyOf = (i: number) => `${keyPrefix}${String(i).padStart(4, '0')}`;
type Pod = KubeObject<CorePod>;

describe('a warm failover from the disk tier, and a tier only its own backend can fill', () => {
  let e: E2ECluster;
  // What the first backend left: its UID, the objects written, those on its tier when its leader died.
  let firstUid = '';
  const written = new Map<string, Written>();
  let onTierAtKill = new Set<string>();
  /** Backends a test made; deleted after it, passed or failed (the nodes have few CPUs). */
  const made: string[] = [];
  const create = (backend: KubeObject) => {
    made.push(backend.metadata.name!);
    return e.cluster.client.create(backend);
  };
  const nodeDir = (node: string) => join(e.cluster.root, 'nodes', node, tierPath);
  const untilBackend = (name: string, what: string, test: (b: KVCacheBackend) => boolean) =>
    waitFor(() => e.backend(name), { what: `${name}: ${what}`, until: test, timeoutMs: 240_000 });
  const leaseHolder = async (name: string) =>
    (
      await e.cluster.client.find<KubeObject<Lease>>({
        apiVersion: 'coordination.k8s.io/v1',
        kind: 'Lease',
        namespace: ns,
        name: `${name}-leader`,
      })
    )?.spec?.holderIdentity ?? '';
  const servingHolder = (name: string) =>
    waitFor(
      async () => {
        const holder = await leaseHolder(name);
        return holder && (await masterFigures(holder).catch(() => undefined)) ? holder : undefined;
      },
      { what: `${name}: a Lease holder whose master answers`, timeoutMs: 120_000 },
    );
  const memberPods = async (name: string) =>
    (
      await e.cluster.client.list<Pod>(
        { apiVersion: 'v1', kind: 'Pod', namespace: ns },
        { labelSelector: `app.kubernetes.io/instance=${name},app.kubernetes.io/component=member-0` },
      )
    ).items.filter((p) => !p.metadata.deletionTimestamp);
  const client = (holder: string) => ({ master: holder, host: e.cluster.hostAddress });
  /** Reads `keys`; every key that reads back must read back its own bytes. Returns the hits. */
  const readBack = async (holder: string, keys: string[]) => {
    const results = await runStoreClient(
      client(holder),
      keys.map((key) => ({ op: 'get' as const, key })),
    );
    const hits = new Map<string, number>();
    for (const [i, r] of results.entries()) {
      if (!('data' in r) || r.data.length === 0) continue;
      assert.equal(sha256(r.data), written.get(keys[i]!)?.sha, `${keys[i]} read back other bytes`);
      hits.set(keys[i]!, r.at!);
    }
    return { hits, first: results[0] };
  };

  before(async () => {
    e = await startE2ECluster();
    // As the walkthrough prepares a tier: `install -d -o 65532 -g 0 -m 0750 <path>` on every node.
    for (const node of e.cluster.nodes) {
      mkdirSync(join(nodeDir(node), '..'), { recursive: true });
      execFileSync('install', ['-d', '-o', '65532', '-g', '0', '-m', '0750', nodeDir(node)]);
    }
  });
  afterEach(async () => {
    for (const name of made.splice(0)) await e.kubectl(['delete', 'kvcb', name, '--timeout=300s']);
  });
  after(() => e?.stop());

  it('brings back every object of a write-through tier, byte-identical, after a SIGKILL of the serving leader', async () => {
    const name = 'warm';
    const created = await create(tierBackend(name, { replicas: 2, capacityPerMember: '128Mi' }));
    firstUid = created.metadata.uid!;
    await untilBackend(name, 'Ready with both members and tiers (2304Mi)', (b) => {
      return b.status?.phase === 'Ready' && b.status.capacity?.total === '2304Mi';
    });
    const args = await e.kubectl([
      '-n',
      ns,
      'get',
      'deployment',
      `${name}-leader`,
      '-o',
      'jsonpath={.spec.template.spec.containers[0].args}',
    ]);
    assert.match(args, /-enable_offload=true.*-offload_on_evict=false/, 'WriteThrough renders the master');
    const holder = await servingHolder(name);

    const payloads = new Map(
      Array.from({ length: objectCount }, (_, i) => [keyOf(i), randomBytes(objectBytes)]),
    );
    for (const [key, data] of payloads) written.set(key, { size: data.length, sha: sha256(data) });
    const puts = await runStoreClient(
      client(holder),
      [...payloads].map(([key, data]) => ({ op: 'put' as const, key, data })),
    );
    assert.equal(puts.filter((p) => 'rc' in p && p.rc === 0).length, objectCount, JSON.stringify(puts));
    payloads.clear();
    const heartbeat = (await memberPods(name))[0]?.spec?.containers
      .find((c) => c.name === 'member')
      ?.env?.find((v) => v.name === 'MOONCAKE_OFFLOAD_HEARTBEAT_INTERVAL_SECONDS');
    assert.equal(heartbeat?.value, '1', 'members beat every second with WriteThrough');

    // The tier settles once the master's file bytes stop growing for 5 offload heartbeats (1 s each).
    let last = { fileBytes: -1, since: Date.now() };
    const settled = await waitFor(
      async () => {
        const m = await masterFigures(holder);
        const fileBytes = m?.fileBytes ?? 0;
        if (fileBytes !== last.fileBytes) last = { fileBytes, since: Date.now() };
        return fileBytes > 0 && Date.now() - last.since >= 5000 ? m : undefined;
      },
      { what: 'the tier’s bytes settled', timeoutMs: 120_000, intervalMs: 500 },
    );
    const perNode = e.cluster.nodes.map((n) => [n, keysOnTier(nodeDir(n), written, keyPrefix)] as const);
    onTierAtKill = new Set(perNode.flatMap(([, keys]) => [...keys]));
    const memoryOnly = [...written.keys()].filter((k) => !onTierAtKill.has(k));
    console.log(
      `${objectCount} objects of ${objectBytes} bytes written; on the tier before the kill: ${onTierAtKill.size} (${perNode.map(([n, k]) => `${n}: ${k.size}`).join(', ')}); the master: key_count ${settled!.keys}, file_cache_nums_ ${settled!.fileObjects}, allocated_file_size_bytes ${settled!.fileBytes} (${settled!.fileBytes! / objectBytes} objects' bytes)`,
    );
    assert.ok(onTierAtKill.size > 0, 'some objects reached the tier');
    // The store's own report should agree with the files on the nodes; checked at the end, so a
    // difference does not hide what the failover does.
    const reportedBefore = settled!;

    // SIGKILL every process of the serving leader's container, and remove its Pod at once so the kubelet
    // does not restart it under the same name (which would take its own Lease back): the standby takes
    // the Lease when it runs out, as after a node's loss.
    const leaders = await e.cluster.client.list<Pod>(
      { apiVersion: 'v1', kind: 'Pod', namespace: ns },
      { labelSelector: `app.kubernetes.io/instance=${name},app.kubernetes.io/component=leader` },
    );
    const old = leaders.items.find((p) => holder.startsWith(`${p.status?.podIP}:`));
    assert.ok(old, `the Pod of the Lease holder ${holder}`);
    const roots = await e.cluster.node(old.spec!.nodeName!).containerPids(ns, old.metadata.name!);
    const table = processTable();
    const pids = roots.flatMap((p) => [p, ...descendants(p, table)]);
    assert.ok(
      pids.some((p) => table.comm.get(p) === 'mooncake_master'),
      'the leader runs mooncake_master',
    );
    const killedAt = Date.now();
    for (const pid of pids) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // Gone with its parent.
      }
    }
    await e.cluster.client.request('DELETE', `/api/v1/namespaces/${ns}/pods/${old.metadata.name}`, {
      body: { gracePeriodSeconds: 0 },
    });
    const since = (at: number) => at - killedAt;

    // Watch the Lease and the new master (100 ms) while a client reads until every tier object is back.
    const deadline = killedAt + 120_000;
    const seen: { holders: string[]; holderAt?: number; servingAt?: number; firstKeyAt?: number } = {
      holders: [],
    };
    let registered: { at: number; keys?: number; fileObjects?: number; fileBytes?: number } | undefined;
    let reading = true;
    const watching = (async () => {
      while (reading && Date.now() < deadline && !registered) {
        const h = await leaseHolder(name).catch(() => '');
        if (h && h !== holder && h !== seen.holders.at(-1)) {
          seen.holders.push(h);
          seen.holderAt ??= Date.now();
        }
        const now = seen.holders.at(-1);
        const m = now ? await masterFigures(now).catch(() => undefined) : undefined;
        if (m) seen.servingAt ??= Date.now();
        if ((m?.keys ?? 0) > 0) seen.firstKeyAt ??= Date.now();
        if ((m?.keys ?? 0) >= onTierAtKill.size) registered = { at: Date.now(), ...m };
        await sleep(100);
      }
    })();
    const firstHit = new Map<string, number>();
    let setupMs: number | undefined;
    let rounds = 0;
    let pending = [...written.keys()];
    try {
      while (Date.now() < deadline && [...onTierAtKill].some((k) => !firstHit.has(k))) {
        const now = seen.servingAt === undefined ? undefined : seen.holders.at(-1);
        if (!now) {
          await sleep(100);
          continue;
        }
        const started = Date.now();
        try {
          const { hits, first } = await readBack(now, pending);
          rounds++;
          setupMs ??= first?.at !== undefined ? first.at - (first.ms ?? 0) - started : undefined;
          for (const [key, at] of hits) if (!firstHit.has(key)) firstHit.set(key, at);
        } catch (err) {
          if (err instanceof assert.AssertionError) throw err;
          console.log(
            `a read round failed ${since(Date.now())} ms after the kill: ${(err as Error).message.slice(0, 300)}`,
          );
          await sleep(200);
        }
        pending = [...onTierAtKill].filter((k) => !firstHit.has(k));
      }
    } catch (err) {
      reading = false;
      throw err;
    }
    await watching;

    const tierHits = [...onTierAtKill].flatMap((k) => (firstHit.has(k) ? [firstHit.get(k)!] : []));
    const firstHitMs = tierHits.length ? since(Math.min(...tierHits)) : undefined;
    const allBackMs = tierHits.length === onTierAtKill.size ? since(Math.max(...tierHits)) : undefined;
    const newHolder = seen.holders.at(-1);
    // Whatever reached the tier after the scan (a bucket written late) may come back too.
    const onTierAfter = new Set(
      e.cluster.nodes.flatMap((n) => [...keysOnTier(nodeDir(n), written, keyPrefix)]),
    );
    const late = memoryOnly.filter((k) => onTierAfter.has(k));
    const lost = memoryOnly.filter((k) => !onTierAfter.has(k));
    const lostHits = newHolder && lost.length ? (await readBack(newHolder, lost)).hits : new Map();
    console.log(
      [
        `killed ${old.metadata.name} (${holder}, ${pids.length} processes); Lease holders since: ${seen.holders.join(' → ') || 'none'}`,
        `new holder after ${seen.holderAt && since(seen.holderAt)} ms, its master answering after ${seen.servingAt && since(seen.servingAt)} ms`,
        `the master: first key after ${seen.firstKeyAt && since(seen.firstKeyAt)} ms, ${registered?.keys} keys (${registered?.fileObjects} on the tier, ${registered?.fileBytes} file bytes) after ${registered && since(registered.at)} ms`,
        `client reads (${rounds} rounds, a fresh client set up in ${setupMs} ms): first tier object back after ${firstHitMs} ms, all ${tierHits.length}/${onTierAtKill.size} back byte-identical after ${allBackMs} ms`,
        `memory only at the kill: ${memoryOnly.length} (${late.length} reached the tier later); ${lostHits.size} of the ${lost.length} never on the tier read back`,
      ].join('\n'),
    );
    assert.ok(newHolder && newHolder !== holder, 'another replica holds the Lease');
    assert.deepEqual(
      [...onTierAtKill].filter((k) => !firstHit.has(k)),
      [],
      'every object on the tier at the kill reads back, with its bytes',
    );
    // docs/failover-and-sizing.md: a failover keeps nothing in memory.
    assert.equal(lostHits.size, 0, 'objects only in memory are lost');
    assert.deepEqual(
      { objects: reportedBefore.fileObjects, bytes: reportedBefore.fileBytes },
      { objects: onTierAtKill.size, bytes: onTierAtKill.size * objectBytes },
      'before the kill, the master’s tier figures are the objects found in the nodes’ bucket files',
    );

    // status.lastFailover: the operator's readings (1 s polls) give the figures measured here. Its byte
    // figures are the master's master_allocated_file_size_bytes, which counts each object's value bytes
    // only (its key and the bucket's layout not included), as the equality above shows.
    const newIp = newHolder.split(':')[0]!;
    // Read as the whole status, so a timeout shows what the operator did write (its conditions name the master read).
    const { lastFailover: lf } = await waitFor(async () => (await e.backend(name)).status, {
      what: `${name}: status.lastFailover of the master at ${newIp}, warm`,
      until: (st) => Boolean(st.lastFailover?.master.startsWith(`${newIp}:`) && st.lastFailover.warmAt),
      timeoutMs: 60_000,
    }).then((st) => ({ lastFailover: st.lastFailover! }));
    const warmAt = Date.parse(lf.warmAt!);
    console.log(
      `status.lastFailover: ${JSON.stringify(lf)}; at ${since(Date.parse(lf.at))} ms and warm ${since(warmAt)} ms after the kill`,
    );
    assert.equal(lf.tierObjectsBefore, onTierAtKill.size, 'tierObjectsBefore: the objects on the tier');
    assert.equal(parseQuantityBytes(lf.tierBytesBefore!), BigInt(onTierAtKill.size * objectBytes));
    const back = lf.reRegisteredObjects!;
    // Objects whose bucket was written after the scan (`late`) may be re-registered too.
    assert.ok(registered, 'the master reported every tier object again');
    assert.ok(
      back >= onTierAtKill.size && back <= onTierAtKill.size + late.length,
      `status.lastFailover: ${back} objects re-registered, warm ${since(warmAt)} ms after the kill; the master reported all ${onTierAtKill.size} again at ${since(registered.at)} ms`,
    );
    assert.equal(parseQuantityBytes(lf.reRegisteredBytes!), BigInt(back * objectBytes));
    assert.ok(killedAt < Date.parse(lf.at) && Date.parse(lf.at) <= warmAt, 'the new master, then warm');
    // Warm no earlier than the store re-registered everything as read here (100 ms polls), and within
    // a few of the operator's 1 s polls after.
    assert.ok(
      warmAt >= registered.at - 500 && warmAt <= registered.at + 5000,
      `warmAt ${since(warmAt)} ms after the kill; every object re-registered at ${since(registered.at)} ms`,
    );
  });

  /** The first backend's tier as it left it: per node, its files; nodes holding more than the marker. */
  const firstTier = () => {
    assert.ok(firstUid && onTierAtKill.size > 0, 'the first test left a tier with objects');
    const files = new Map(e.cluster.nodes.map((n) => [n, tierFiles(nodeDir(n))]));
    const held = e.cluster.nodes.filter((n) => [...files.get(n)!.keys()].some((f) => f !== marker));
    for (const n of held)
      assert.match(readFileSync(join(nodeDir(n), marker), 'utf8'), new RegExp(`^uid=${firstUid}$`, 'm'));
    assert.ok(held.length > 0, 'a node holds the first backend’s files');
    return { files, held };
  };

  it('refuses a tier directory marked by another backend (Refuse): the member never starts, nothing is re-registered', async () => {
    const { files, held } = firstTier();
    const name = 'warm-refuse';
    await create(tierBackend(name, { replicas: 1, capacityPerMember: '64Mi', foreignContent: 'Refuse' }));
    const b = await untilBackend(name, 'ForeignContentRefused', (x) =>
      held.every((n) => conditionOf(x, 'TierWasEmpty')?.message.includes(`${n}: `) ?? false),
    );
    const condition = conditionOf(b, 'TierWasEmpty')!;
    console.log(`TierWasEmpty=${condition.status}/${condition.reason}: ${condition.message}`);
    assert.equal(condition.reason, 'ForeignContentRefused');
    for (const n of held)
      assert.ok(condition.message.includes(`${n}: `) && condition.message.includes(firstUid));
    const pods = await waitFor(
      async () => {
        const all = (await memberPods(name)).filter((p) => held.includes(p.spec!.nodeName!));
        const refused = all.filter((p) =>
          p.status?.initContainerStatuses?.some(
            (s) => (s.state?.terminated ?? s.lastState?.terminated)?.exitCode === 1,
          ),
        );
        return refused.length === held.length ? refused : undefined;
      },
      { what: 'the survey refusing on every node holding the files' },
    );
    for (const p of pods)
      assert.ok(
        (p.status?.containerStatuses ?? []).every((c) => !c.state?.running && !c.lastState?.terminated),
        `${p.metadata.name}: the member never ran`,
      );
    const holder = await servingHolder(name);
    const m = await masterFigures(holder);
    const { hits } = await readBack(holder, [...onTierAtKill]);
    console.log(
      `refused: the new master has ${m?.keys} keys, tier capacity ${m?.fileCapacity}; ${hits.size} old keys read back`,
    );
    assert.equal(m?.keys, 0, 'the new master knows no key');
    assert.equal(hits.size, 0, 'none of the old keys reads back');
    for (const n of held)
      assert.deepEqual(tierFiles(nodeDir(n)), files.get(n), `${n}: the files are left as they were`);
  });

  it('empties a tier directory marked by another backend before the store mounts it (Remove): no old key comes back', async () => {
    const { held } = firstTier();
    const name = 'warm-remove';
    const created = await create(
      tierBackend(name, { replicas: 1, capacityPerMember: '64Mi', foreignContent: 'Remove' }),
    );
    const b = await untilBackend(
      name,
      'Ready with both tiers, TierWasEmpty decided',
      (x) =>
        x.status?.phase === 'Ready' &&
        x.status.capacity?.total === '2176Mi' &&
        conditionOf(x, 'TierWasEmpty') !== undefined,
    );
    const condition = conditionOf(b, 'TierWasEmpty')!;
    console.log(`TierWasEmpty=${condition.status}/${condition.reason}: ${condition.message}`);
    assert.equal(condition.reason, 'ForeignContentRemoved');
    for (const n of held)
      assert.ok(condition.message.includes(`${n}: `) && condition.message.includes(firstUid));
    for (const p of (await memberPods(name)).filter((x) => held.includes(x.spec!.nodeName!))) {
      const survey = p.status!.initContainerStatuses!.find((s) => s.name === 'local-disk-survey')!;
      assert.match(survey.state?.terminated?.message ?? '', /tier=removed marker=/, p.metadata.name);
      const member = p.status!.containerStatuses!.find((c) => c.name === 'member')!.state?.running?.startedAt;
      assert.ok(
        member && Date.parse(survey.state!.terminated!.finishedAt!) <= Date.parse(member),
        `${p.metadata.name}: emptied before the store started`,
      );
    }
    for (const n of e.cluster.nodes) {
      assert.equal(keysOnTier(nodeDir(n), written, keyPrefix).size, 0, `${n}: no old object remains`);
      assert.match(
        readFileSync(join(nodeDir(n), marker), 'utf8'),
        new RegExp(`^uid=${created.metadata.uid}$`, 'm'),
      );
    }
    const holder = await servingHolder(name);
    // Members re-register their tier as they mount it; a few offload heartbeats (1 s) later, still nothing.
    await waitFor(() => masterFigures(holder), {
      what: 'both tiers mounted',
      until: (m) => m?.fileCapacity === 2 * 1024 ** 3,
    });
    await sleep(5000);
    const m = await masterFigures(holder);
    const { hits } = await readBack(holder, [...onTierAtKill]);
    console.log(
      `removed: the new master has ${m?.keys} keys, ${m?.fileBytes} file bytes; ${hits.size} old keys read back`,
    );
    assert.equal(m?.keys, 0, 'the new master knows no key');
    assert.equal(hits.size, 0, 'none of the old keys reads back');
  });
});
