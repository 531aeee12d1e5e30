// The store is safe to run: a leader cut off from the API server stops serving before a standby takes
// over (never two masters), API-server outages shorter than the Lease keep the cache, longer ones stop
// the master, and a new store image rolls one member at a time. Faults are real: the leader Pod's own
// network namespace drops its traffic to the API server (iptables), the API server process is stopped
// or frozen (SIGSTOP), the new image is a second tag added with each node's ctr.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { storeImage } from '../../images/recipes.ts';
import type { KVCacheBackend } from '../../src/api/types.ts';
import type { KubeObject } from '../../src/kube/object.ts';
import { type E2ECluster, eventually, startE2ECluster } from '../support/local-cluster.ts';
import { seedText } from '../support/seed.ts';
import { runStoreClient } from '../support/store-client.ts';

const ns = 'gpustack-system';
const adminPort = 9003;
type Pod = KubeObject & {
  spec: { nodeName?: string };
  status?: { podIP?: string; containerStatuses?: { ready?: boolean }[] };
};
type Slice = KubeObject & { endpoints?: { addresses: string[]; conditions?: { ready?: boolean } }[] };

/** Whether a master answers on this address now (its admin port), within a short timeout. */
async function masterServes(ip: string): Promise<boolean> {
  try {
    const res = await fetch(`http://${ip}:${adminPort}/metrics`, { signal: AbortSignal.timeout(400) });
    await res.arrayBuffer();
    return res.ok;
  } catch {
    return false;
  }
}

describe('the store is safe to run', () => {
  let e: E2ECluster;
  const pods = async (component: string) =>
    (
      await e.cluster.client.list<Pod>(
        { apiVersion: 'v1', kind: 'Pod', namespace: ns },
        {
          labelSelector: `app.kubernetes.io/instance=mooncake-dram,app.kubernetes.io/component=${component}`,
        },
      )
    ).items.filter((p) => !p.metadata.deletionTimestamp);
  const serving = async () => (await pods('leader')).find((p) => p.status?.containerStatuses?.[0]?.ready);
  const readyEndpoints = async () =>
    (
      await e.cluster.client.list<Slice>(
        { apiVersion: 'discovery.k8s.io/v1', kind: 'EndpointSlice', namespace: ns },
        { labelSelector: 'kubernetes.io/service-name=mooncake-dram-leader' },
      )
    ).items.flatMap((s) =>
      (s.endpoints ?? []).filter((p) => p.conditions?.ready).flatMap((p) => p.addresses),
    );
  const backendReady = () =>
    eventually(
      'mooncake-dram Ready with 16Gi',
      async () => {
        const b = await e.cluster.client.get<KVCacheBackend>({
          apiVersion: 'worker.gpustack.ai/v1',
          kind: 'KVCacheBackend',
          name: 'mooncake-dram',
        });
        return b.status?.phase === 'Ready' && b.status.capacity?.total === '16Gi' ? b : undefined;
      },
      180_000,
    );
  const store = (ip: string, ops: Parameters<typeof runStoreClient>[1]) =>
    runStoreClient({ master: `${ip}:50051`, host: e.cluster.hostAddress, tenant: 'default' }, ops);

  before(async () => {
    e = await startE2ECluster();
    await e.kubectl(['apply', '--server-side', '-f', '-'], seedText('step-1-store.yaml'));
    await e.kubectl(['create', 'namespace', 'team-a']);
    await e.kubectl(['apply', '--server-side', '-f', '-'], seedText('step-2-pool-binding.yaml'));
    await e.kubectl(['apply', '--server-side', '-f', '-'], seedText('step-4-ha.yaml'));
    await backendReady();
    await eventually('3 leader replicas, one serving', async () =>
      (await pods('leader')).length === 3 && (await serving()) ? true : undefined,
    );
  });
  after(() => e?.stop());

  it('keeps one leader serving through API-server outages of 6 s, refused and hanging; the key stays', async () => {
    const leader = (await serving())!;
    const ip = leader.status!.podIP!;
    const others = (await pods('leader')).filter((p) => p.metadata.uid !== leader.metadata.uid);
    assert.deepEqual(await store(ip, [{ op: 'put', key: 'before-outage', data: Buffer.from('kept') }]), [
      { rc: 0 },
    ]);
    for (const kind of ['refused', 'hanging'] as const) {
      const samples: { leader: boolean; others: number }[] = [];
      let sampling = true;
      const sampler = (async () => {
        while (sampling) {
          const otherServing = await Promise.all(others.map((p) => masterServes(p.status!.podIP!)));
          samples.push({ leader: await masterServes(ip), others: otherServing.filter(Boolean).length });
          await sleep(100);
        }
      })();
      if (kind === 'refused') await e.cluster.cp.stopApiserver();
      else e.cluster.cp.freezeApiserver(true);
      await sleep(6000);
      if (kind === 'refused') await e.cluster.cp.startApiserver();
      else e.cluster.cp.freezeApiserver(false);
      await sleep(2000);
      sampling = false;
      await sampler;
      console.log(
        `${kind} outage of 6 s: ${samples.length} samples, leader serving in ${samples.filter((s) => s.leader).length}`,
      );
      assert.ok(samples.length > 40, `sampled every 100 ms (${samples.length})`);
      assert.ok(
        samples.every((s) => s.leader),
        `${kind}: the same leader served throughout`,
      );
      assert.ok(
        samples.every((s) => s.others === 0),
        `${kind}: no other master served`,
      );
      const [got] = await store(ip, [{ op: 'get', key: 'before-outage' }]);
      assert.ok(got && 'data' in got && got.data.toString() === 'kept', `${kind}: the key reads back`);
    }
    await backendReady();
  });

  it('stops the master when the API server hangs for longer than the Lease allows', async () => {
    const ip = (await serving())!.status!.podIP!;
    e.cluster.cp.freezeApiserver(true);
    const t0 = performance.now();
    let stoppedAfterMs: number | undefined;
    try {
      while (performance.now() - t0 < 12_000) {
        if (!(await masterServes(ip))) {
          stoppedAfterMs = performance.now() - t0;
          break;
        }
        await sleep(100);
      }
    } finally {
      e.cluster.cp.freezeApiserver(false);
    }
    console.log(
      `API server frozen: the leader stopped its master after ${Math.round(stoppedAfterMs ?? -1)} ms`,
    );
    assert.ok(stoppedAfterMs !== undefined, 'the master stopped while the API server hung');
    await backendReady();
  });

  it('never has two masters when the leader loses the API server and a standby takes over', async () => {
    const leader = (await serving())!;
    const node = e.cluster.node(leader.spec.nodeName!);
    const [pid] = await node.containerPids(ns, leader.metadata.name!);
    assert.ok(pid, 'the leader container’s process');
    const targets = [e.cluster.network.addressing.kubernetesServiceIp, e.cluster.hostAddress];
    // Drop, in the leader Pod's own network namespace, everything it sends to the API server.
    const iptables = (op: '-I' | '-D', target: string) =>
      execFileSync('nsenter', [
        `--net=/proc/${pid}/ns/net`,
        'iptables',
        op,
        'OUTPUT',
        '-d',
        target,
        '-j',
        'DROP',
      ]);
    const all = await pods('leader');
    const samples: { masters: number; endpoints: number }[] = [];
    for (const t of targets) iptables('-I', t);
    try {
      const t0 = performance.now();
      let takenOver = false;
      while (performance.now() - t0 < 40_000) {
        const masters = (await Promise.all(all.map((p) => masterServes(p.status!.podIP!)))).filter(
          Boolean,
        ).length;
        const endpoints = (await readyEndpoints()).length;
        samples.push({ masters, endpoints });
        const now = await serving();
        if (now && now.metadata.uid !== leader.metadata.uid && masters === 1) takenOver = true;
        if (takenOver && samples.length > 5) break;
        await sleep(100);
      }
      console.log(
        `leader cut off: ${samples.length} samples; at most ${Math.max(...samples.map((s) => s.masters))} master(s) and ${Math.max(...samples.map((s) => s.endpoints))} ready endpoint(s) at once`,
      );
      assert.ok(takenOver, 'a standby took over');
      assert.ok(
        samples.every((s) => s.masters <= 1),
        'never two masters serving',
      );
      assert.ok(
        samples.every((s) => s.endpoints <= 1),
        'never two ready endpoints behind the leader Service',
      );
    } finally {
      for (const t of targets) iptables('-D', t);
    }
    await backendReady();
  });

  it('rolls a new store image one member at a time: capacity never drops to zero, unrolled keys stay', async () => {
    const ip = (await serving())!.status!.podIP!;
    const members = await pods('member-0');
    assert.equal(members.length, 2);
    const memberIps = new Set(members.map((m) => m.status!.podIP!));
    const keys = Array.from({ length: 16 }, (_, i) => `roll-${i}`);
    await store(
      ip,
      keys.map((key) => ({ op: 'put' as const, key, data: Buffer.from(`value of ${key}`) })),
    );
    /** The member Pod IP holding each key, as the master says. */
    const homes = new Map<string, string>();
    for (const key of keys) {
      const where = await (await fetch(`http://${ip}:${adminPort}/query_key?key=${key}`)).text();
      const home = [...memberIps].find((m) => where.includes(`"${m}:`));
      if (home) homes.set(key, home);
    }
    assert.ok(homes.size > 0, 'the master says where the keys live');

    // The same image under a second tag, on every node: a new kv-cache-backend-image.
    const secondTag = `${storeImage}-roll`;
    for (const n of e.cluster.nodes) {
      await e.cluster.node(n).exec(['ctr', '-n', 'k8s.io', 'images', 'tag', storeImage, secondTag]);
    }
    const capacities: number[] = [];
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        const b = await e.cluster.client
          .get<KVCacheBackend>({
            apiVersion: 'worker.gpustack.ai/v1',
            kind: 'KVCacheBackend',
            name: 'mooncake-dram',
          })
          .catch(() => undefined);
        const total = b?.status?.capacity?.total;
        if (total !== undefined)
          capacities.push(total === '16Gi' ? 16 : total === '8Gi' ? 8 : Number.parseFloat(String(total)));
        await sleep(100);
      }
    })();
    await e.kubectl([
      '-n',
      ns,
      'patch',
      'setting',
      'kv-cache-backend-image',
      '--type=merge',
      '-p',
      JSON.stringify({ spec: { value: secondTag.replace(/^docker\.io\//, '') } }),
    ]);
    // While exactly one member runs the new image, the other member's keys read back.
    const oldUids = new Set(members.map((m) => m.metadata.uid));
    const halfway = await eventually(
      'one member rolled, the other not yet',
      async () => {
        const now = await pods('member-0');
        const rolled = now.filter((m) => !oldUids.has(m.metadata.uid));
        const unrolled = now.filter((m) => oldUids.has(m.metadata.uid));
        return rolled.length === 1 && unrolled.length === 1 ? unrolled[0]! : undefined;
      },
      180_000,
    );
    const unrolledIp = halfway.status!.podIP!;
    const kept = [...homes].filter(([, home]) => home === unrolledIp).map(([key]) => key);
    const leaderNow = (await serving())!.status!.podIP!;
    for (const key of kept) {
      const [got] = await store(leaderNow, [{ op: 'get', key }]);
      assert.ok(
        got && 'data' in got && got.data.toString() === `value of ${key}`,
        `${key} on the unrolled member`,
      );
    }
    await eventually(
      'both members on the new image and the backend Ready with 16Gi',
      async () => {
        const now = await pods('member-0');
        const b = await e.cluster.client.get<KVCacheBackend>({
          apiVersion: 'worker.gpustack.ai/v1',
          kind: 'KVCacheBackend',
          name: 'mooncake-dram',
        });
        return now.length === 2 &&
          now.every((m) => !oldUids.has(m.metadata.uid)) &&
          b.status?.capacity?.total === '16Gi'
          ? true
          : undefined;
      },
      300_000,
    );
    sampling = false;
    await sampler;
    console.log(
      `member roll: ${capacities.length} capacity samples, lowest ${Math.min(...capacities)}Gi; ${kept.length} keys on the unrolled member read back`,
    );
    assert.ok(capacities.length > 10);
    assert.ok(Math.min(...capacities) > 0, 'capacity never dropped to zero');
  });
});
