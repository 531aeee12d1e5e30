// The walkthrough's store on the embedded local cluster, for real: Step 1 (two 8Gi members read back
// as 16Gi from the master), Step 4 (three leaders, one serving), and failovers — graceful delete, a
// hard kill of the Pod, a SIGKILL of the process — with Service and with Lease member addressing.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import type { KVCachePool, KVCachePoolBinding } from '../../src/api/types.ts';
import type { KubeObject } from '../../src/kube/object.ts';
import { conditionOf, type E2ECluster, eventually, startE2ECluster } from '../support/local-cluster.ts';
import { seedText } from '../support/seed.ts';
import { runStoreClient } from '../support/store-client.ts';

const ns = 'gpustack-system';
type Pod = KubeObject & {
  status?: { podIP?: string; containerStatuses?: { ready?: boolean; restartCount?: number }[] };
  spec: { nodeName?: string; containers: { resources?: { requests?: Record<string, string> } }[] };
};

describe('the walkthrough store on the local cluster', () => {
  let e: E2ECluster;
  const leaders = async () =>
    (
      await e.cluster.client.list<Pod>(
        { apiVersion: 'v1', kind: 'Pod', namespace: ns },
        { labelSelector: 'app.kubernetes.io/component=leader' },
      )
    ).items;
  const serving = async () =>
    (await leaders()).find((p) => p.status?.containerStatuses?.[0]?.ready && !p.metadata.deletionTimestamp);
  /** Ready with the full 16Gi, read from a master other than `notAt` (a new leader), and how long it took. */
  const readyAgain = async (t0: number, notAt: string) => {
    await eventually('the backend Ready with 16Gi on a new leader', async () => {
      const b = await e.backend('mooncake-dram');
      const leader = conditionOf(b, 'LeaderAvailable')?.message ?? '';
      return b.status?.phase === 'Ready' &&
        b.status.capacity?.total === '16Gi' &&
        !leader.includes(`${notAt}:`)
        ? true
        : undefined;
    });
    return performance.now() - t0;
  };
  const poolAndBindingReady = async () => {
    await eventually('pool and Binding Ready', async () => {
      const p = await e.cluster.client.get<KVCachePool>({
        apiVersion: 'worker.gpustack.ai/v1',
        kind: 'KVCachePool',
        name: 'shared-dram',
      });
      const b = await e.cluster.client.get<KVCachePoolBinding>({
        apiVersion: 'worker.gpustack.ai/v1',
        kind: 'KVCachePoolBinding',
        namespace: 'team-a',
        name: 'team-a',
      });
      return p.status?.phase === 'Ready' && b.status?.phase === 'Ready' && b.status.effectiveQuota === '8Gi'
        ? true
        : undefined;
    });
  };
  const write = async (key: string, ip: string) =>
    runStoreClient({ master: `${ip}:50051`, host: e.cluster.hostAddress, tenant: 'default' }, [
      { op: 'put', key, data: Buffer.from(`value of ${key}`) },
    ]);
  const read = async (key: string, ip: string) =>
    runStoreClient({ master: `${ip}:50051`, host: e.cluster.hostAddress, tenant: 'default' }, [
      { op: 'get', key },
    ]);

  before(async () => {
    e = await startE2ECluster();
  });
  after(() => e?.stop());

  it('Step 1: Ready, the Service endpoint, 16Gi read from the master; members request 8Gi', async () => {
    await e.kubectl(['apply', '--server-side', '-f', '-'], seedText('step-1-store.yaml'));
    // As the walkthrough says, a smaller figure only means a member has not registered yet: wait for both.
    const row = await eventually('kubectl get kvcb shows Ready with 16Gi', async () => {
      const out = await e.kubectl(['get', 'kvcb', 'mooncake-dram', '--no-headers']);
      return /\sReady\s.*\s16Gi\s/.test(out) ? out : undefined;
    });
    assert.match(
      row,
      /^mooncake-dram\s+Mooncake\s+Ready\s+mooncake-dram-leader\.gpustack-system\.svc:50051\s+16Gi\s/,
    );
    const b = await e.backend('mooncake-dram');
    assert.equal(conditionOf(b, 'MembersMounted')?.status, 'True');
    assert.equal(b.status?.members?.length, 2);
    assert.deepEqual(new Set(b.status?.members?.map((m) => m.nodeName)), new Set(e.cluster.nodes));
    const members = (
      await e.cluster.client.list<Pod>(
        { apiVersion: 'v1', kind: 'Pod', namespace: ns },
        { labelSelector: 'app.kubernetes.io/component=member-0' },
      )
    ).items;
    for (const m of members) assert.equal(m.spec.containers[0]!.resources?.requests?.memory, '8Gi');
    let resident = 0;
    for (const m of members) {
      const node = e.cluster.node(m.spec.nodeName!);
      for (const pid of await node.containerPids(ns, m.metadata.name!)) {
        resident += Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0);
      }
    }
    console.log(
      `two 8Gi members' main processes hold ${Math.round(resident / 1024)} MiB resident before any write`,
    );
  });

  it('Step 2 on top: the pool and the Binding are Ready, and a key can be written under the domain', async () => {
    await e.kubectl(['create', 'namespace', 'team-a']);
    await e.kubectl(['apply', '--server-side', '-f', '-'], seedText('step-2-pool-binding.yaml'));
    await poolAndBindingReady();
    const ip = (await serving())!.status!.podIP!;
    assert.deepEqual(await write('before-failover', ip), [{ rc: 0 }]);
  });

  it('Step 4: three leader replicas, one serving (3 desired / 1 ready), the first leader Pod kept', async () => {
    const first = (await serving())!.metadata.uid;
    await e.kubectl(['apply', '--server-side', '-f', '-'], seedText('step-4-ha.yaml'));
    const row = await eventually('3 desired / 1 ready', async () => {
      const out = await e.kubectl(['-n', ns, 'get', 'deployment', 'mooncake-dram-leader', '--no-headers']);
      return /^mooncake-dram-leader\s+1\/3\s+3\s+1\s/.test(out) ? out : undefined;
    });
    assert.ok(row);
    const b = await eventually('ElectionObserved and RolloutComplete', async () => {
      const x = await e.backend('mooncake-dram');
      return conditionOf(x, 'ElectionObserved')?.status === 'True' &&
        conditionOf(x, 'RolloutComplete')?.status === 'True'
        ? x
        : undefined;
    });
    assert.equal(b.status?.phase, 'Ready');
    assert.equal((await serving())!.metadata.uid, first, 'the first leader Pod still serves');
  });

  it('fails over when the serving leader Pod is deleted: a standby serves, members remount, the cache is cold', async () => {
    const old = (await serving())!;
    // A tenant someone else registers through the admin API survives the failover: the seed merges it.
    const put = await fetch(`http://${old.status!.podIP}:9003/api/v1/tenant_quotas?tenant_id=someone-else`, {
      method: 'PUT',
      body: JSON.stringify({ requested_quota_bytes: 4194304 }),
    });
    assert.equal(put.status, 200, await put.text());
    await eventually('the seed policy to carry the other tenant', async () => {
      const seed = await e.kubectl([
        '-n',
        ns,
        'get',
        'configmap',
        'mooncake-dram-tenant-quota-policy',
        '-o',
        'jsonpath={.data.tenant-quota-policy\\.yaml}',
      ]);
      return seed.includes('someone-else') ? true : undefined;
    });
    const t0 = performance.now();
    await e.kubectl(['-n', ns, 'delete', 'pod', old.metadata.name!, '--wait=false']);
    const ms = await readyAgain(t0, old.status!.podIP!);
    console.log(`graceful delete → Ready with 16Gi: ${Math.round(ms)} ms`);
    await poolAndBindingReady();
    const ip = (await serving())!.status!.podIP!;
    assert.notEqual(ip, old.status!.podIP);
    const tenants = (await (await fetch(`http://${ip}:9003/api/v1/tenant_quotas`)).json()) as {
      data: { tenant_id: string; requested_quota_bytes: number }[];
    };
    assert.deepEqual(
      tenants.data.find((t) => t.tenant_id === 'someone-else')?.requested_quota_bytes,
      4194304,
      'the new leader starts with the tenant someone else registered',
    );
    const handover = await eventually(
      'a KVCacheLeaderHandover event',
      async () => {
        const out = await e.kubectl([
          'get',
          'events',
          '-A',
          '--field-selector',
          'reason=KVCacheLeaderHandover',
          '-o',
          'jsonpath={.items[*].message}',
        ]);
        return out.includes(old.status!.podIP!) ? out : undefined;
      },
      15_000,
    );
    assert.match(handover, /Lease transitions: \d+/);
    const [got] = await read('before-failover', ip);
    assert.ok(
      got && 'data' in got && got.data.length === 0,
      'a key written before the failover is gone (cold cache)',
    );
  });

  it('fails over when the serving leader Pod is killed hard (force delete); the time is the failover benchmark’s', async () => {
    const old = (await serving())!;
    const t0 = performance.now();
    await e.kubectl(['-n', ns, 'delete', 'pod', old.metadata.name!, '--grace-period=0', '--force']);
    const ms = await readyAgain(t0, old.status!.podIP!);
    console.log(`hard kill → Ready with 16Gi: ${Math.round(ms)} ms`);
    await poolAndBindingReady();
  });

  it('recovers when the leader’s process is SIGKILLed (the container restarts or a standby takes over)', async () => {
    const old = (await serving())!;
    // The container's own process, found through the node's CRI (crictl), as an operator would.
    const pids = await e.cluster.node(old.spec!.nodeName!).containerPids(ns, old.metadata.name!);
    assert.ok(pids.length > 0);
    const t0 = performance.now();
    for (const pid of pids) process.kill(pid, 'SIGKILL');
    // A restart in place can be quicker than the backend's next observation, so the proof that the
    // kill took effect is the Pods': the old leader's container restarted, or another Pod serves.
    const restarts = (p: Pod) => p.status?.containerStatuses?.[0]?.restartCount ?? 0;
    await eventually('the leader container to restart or a standby to serve', async () => {
      const now = await serving();
      return now && (now.metadata.uid !== old.metadata.uid || restarts(now) > restarts(old))
        ? true
        : undefined;
    });
    await eventually('Ready with 16Gi again', async () => {
      const b = await e.backend('mooncake-dram');
      return b.status?.phase === 'Ready' && b.status.capacity?.total === '16Gi' ? true : undefined;
    });
    console.log(`SIGKILL of the leader process → Ready with 16Gi: ${Math.round(performance.now() - t0)} ms`);
    await poolAndBindingReady();
  });

  it('fails over the same way with memberAddressing: Lease', async () => {
    await e.kubectl([
      'patch',
      'kvcb',
      'mooncake-dram',
      '--type=merge',
      '-p',
      '{"spec":{"connection":{"managed":{"leader":{"memberAddressing":"Lease"}}}}}',
    ]);
    await eventually(
      'members re-pointed through the Lease',
      async () => {
        const members = (
          await e.cluster.client.list<
            Pod & { spec: { containers: { env?: { name: string; value?: string }[] }[] } }
          >(
            { apiVersion: 'v1', kind: 'Pod', namespace: ns },
            { labelSelector: 'app.kubernetes.io/component=member-0' },
          )
        ).items;
        const ok =
          members.length === 2 &&
          members.every(
            (m) =>
              !m.metadata.deletionTimestamp &&
              m.status?.containerStatuses?.[0]?.ready &&
              m.spec.containers[0]!.env?.some(
                (v) => v.value === 'k8s://gpustack-system/mooncake-dram-leader',
              ),
          );
        const b = await e.backend('mooncake-dram');
        return ok && b.status?.phase === 'Ready' && b.status.capacity?.total === '16Gi' ? true : undefined;
      },
      120_000,
    );
    const old = (await serving())!;
    const t0 = performance.now();
    await e.kubectl(['-n', ns, 'delete', 'pod', old.metadata.name!, '--wait=false']);
    console.log(
      `Lease addressing, graceful delete → Ready with 16Gi: ${Math.round(await readyAgain(t0, old.status!.podIP!))} ms`,
    );
    await poolAndBindingReady();
  });
});
