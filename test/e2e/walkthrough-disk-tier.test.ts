// Step 5 (the local disk tier) on the local cluster, with real bucket writes: the directory prepared
// as the step says, TierWasEmpty, spilling to disk and reading back, the directory failure modes, the
// admission refusal, and cleanAfterDelete.

import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { KVCacheBackend } from '../../src/api/types.ts';
import type { KubeObject } from '../../src/kube/object.ts';
import { type ManagedConnection, managedBackend } from '../builders/index.ts';
import { conditionOf, type E2ECluster, startE2ECluster } from '../support/local-cluster.ts';
import { seedText } from '../support/seed.ts';
import { runStoreClient } from '../support/store-client.ts';
import { waitFor } from '../support/wait.ts';

const MiB = 1 << 20;
const cleanupDeadlineMs = 20_000;
const ns = 'gpustack-system';
type Pod = KubeObject & { status?: { podIP?: string; containerStatuses?: { ready?: boolean }[] } };

function diskBackend(
  name: string,
  path: string,
  extra: Record<string, unknown> = {},
  leader: Record<string, unknown> = {},
): KubeObject {
  return managedBackend(name, {
    leader,
    members: [
      {
        nodeSelector: { kvcache: 'true' },
        medium: 'DRAM',
        capacityPerMember: '64Mi',
        localDisks: [{ path, capacity: '1Gi', ...extra }],
      },
    ],
  } as ManagedConnection);
}

describe('Step 5: the local disk tier on the local cluster', () => {
  let e: E2ECluster;
  const nodeDir = (node: string, path: string) => join(e.cluster.root, 'nodes', node, path);
  /** As the walkthrough says: `install -d -o 65532 -g 0 -m 0750 <path>` on every selected node. */
  const prepare = (path: string) => {
    for (const node of e.cluster.nodes) {
      mkdirSync(join(nodeDir(node, path), '..'), { recursive: true });
      execFileSync('install', ['-d', '-o', '65532', '-g', '0', '-m', '0750', nodeDir(node, path)]);
    }
  };
  const backend = (name: string) => e.backend(name);
  const untilBackend = (
    name: string,
    what: string,
    test: (b: KVCacheBackend) => boolean,
    timeoutMs = 90_000,
  ) => waitFor(() => backend(name), { what: `${name}: ${what}`, until: test, timeoutMs });
  /** Deleted before the operator first saw it, a backend has no finalizer and nothing is cleaned. */
  const ownedByOperator = (name: string) =>
    untilBackend(name, 'the operator’s finalizer', (b) => (b.metadata.finalizers ?? []).length > 0);
  const servingLeaderIP = async (name: string) =>
    (
      await e.cluster.client.list<Pod>(
        { apiVersion: 'v1', kind: 'Pod', namespace: ns },
        { labelSelector: `app.kubernetes.io/instance=${name},app.kubernetes.io/component=leader` },
      )
    ).items.find((p) => p.status?.containerStatuses?.[0]?.ready)!.status!.podIP!;

  before(async () => {
    e = await startE2ECluster({
      nodeLabels: { 'kvpool-node-1': { kvcache: 'true' }, 'kvpool-node-2': { kvcache: 'true' } },
      // A short cleanup deadline (5 minutes by default) so a node that never runs its cleanup is
      // reported within this test.
      operatorArgs: [`--tier-cleanup-deadline-ms=${cleanupDeadlineMs}`],
    });
  });
  after(() => e?.stop());

  it('refuses adding localDisks to Step 1’s running backend', async () => {
    await e.kubectl(['apply', '--server-side', '-f', '-'], seedText('step-1-store.yaml'));
    await assert.rejects(
      e.kubectl([
        'patch',
        'kvcb',
        'mooncake-dram',
        '--type=json',
        '-p',
        '[{"op":"add","path":"/spec/connection/managed/members/0/localDisks","value":[{"path":"/var/lib/kvcache","capacity":"100Gi"}]}]',
      ]),
      /spec\.connection\.managed\.members\[0\]\.localDisks.*new backend/s,
    );
  });

  it('Step 5 verbatim: Ready, the tier was empty, capacity includes the declared tier', async () => {
    prepare('/var/lib/kvcache');
    await e.kubectl(['apply', '--server-side', '-f', '-'], seedText('step-5-disk-backend.yaml'));
    // Two 8Gi segments plus two 100Gi tiers, as the master reports them once both members registered.
    const b = await untilBackend(
      'mooncake-disk',
      'Ready with 216Gi and TierWasEmpty',
      (x) =>
        x.status?.phase === 'Ready' &&
        x.status.capacity?.total === '216Gi' &&
        conditionOf(x, 'TierWasEmpty') !== undefined,
    );
    assert.equal(conditionOf(b, 'TierWasEmpty')?.reason, 'Empty');
    const leader = await e.kubectl([
      '-n',
      ns,
      'get',
      'deployment',
      'mooncake-disk-leader',
      '-o',
      'jsonpath={.spec.template.spec.containers[0].args}',
    ]);
    assert.match(leader, /-enable_offload=true.*-offload_on_evict=true/);
  });

  // What this shows is the spill: every object's copy written to the tier's buckets once DRAM is full.
  // A read served from the tier alone is not shown: the master evicts a memory copy only for a later
  // write, and with this store's version none was evicted within 90 s (master_evicted_key_count_mem 0).
  it('spills to disk in buckets when DRAM is full, and the first key reads back byte-identical', async () => {
    prepare('/var/lib/kvcache-small');
    // No tenant ledger on this one, so no Binding holds its deletion later (a domain with data cannot be released).
    await e.cluster.client.create(
      diskBackend(
        'disk-small',
        '/var/lib/kvcache-small',
        { cleanAfterDelete: true },
        { multiTenancy: false },
      ),
    );
    await untilBackend(
      'disk-small',
      'Ready with both members',
      (x) => x.status?.phase === 'Ready' && x.status.capacity?.total === '2176Mi',
    );
    const ip = await servingLeaderIP('disk-small');
    const client = { master: `${ip}:50051`, host: e.cluster.hostAddress };
    const block = (i: number) => Buffer.alloc(MiB, i % 251);
    const puts = await runStoreClient(
      client,
      Array.from({ length: 200 }, (_, i) => ({ op: 'put' as const, key: `k${i}`, data: block(i) })),
    );
    console.log(
      `200 × 1 MiB puts into 128 MiB of DRAM: ${puts.filter((p) => 'rc' in p && p.rc === 0).length} accepted`,
    );
    const written = await waitFor(
      async () => {
        const metrics = await (await fetch(`http://${ip}:9003/metrics`)).text();
        const v = Number(/^master_allocated_file_size_bytes (\d+)/m.exec(metrics)?.[1] ?? 0);
        return v > 0 ? v : undefined;
      },
      { what: 'bucket bytes on the tier', timeoutMs: 60_000 },
    );
    console.log(`master_allocated_file_size_bytes ${written}`);
    const onDisk = e.cluster.nodes.flatMap((n) =>
      readdirSync(nodeDir(n, '/var/lib/kvcache-small')).filter((f) => f.endsWith('.bucket')),
    );
    assert.ok(onDisk.length > 0, 'bucket files exist in the tier directories');
    // A read can fail for a moment under load (a transfer timeout) without the key being gone: three
    // tries, and a failure says where the master places it.
    let k0: Buffer | undefined;
    for (let attempt = 1; attempt <= 3 && !k0?.equals(block(0)); attempt++) {
      const [got] = await runStoreClient(client, [{ op: 'get', key: 'k0' }]);
      k0 = got && 'data' in got ? got.data : undefined;
      if (!k0?.equals(block(0))) console.log(`attempt ${attempt}: k0 read back ${k0?.length ?? 0} bytes`);
    }
    const where = await (await fetch(`http://${ip}:9003/query_key?key=k0`)).text();
    console.log(`where k0 lives: ${where.slice(0, 300)}`);
    assert.ok(k0?.equals(block(0)), `the first key reads back byte-identical; the master says ${where}`);
  });

  it('refuses another backend’s files once (ForeignContentRefused, node: count) with a Warning event', async () => {
    prepare('/var/lib/kvcache-dirty');
    writeFileSync(join(nodeDir('kvpool-node-1', '/var/lib/kvcache-dirty'), 'left-over.bucket'), 'old');
    await e.cluster.client.create(diskBackend('disk-dirty', '/var/lib/kvcache-dirty'));
    const b = await untilBackend(
      'disk-dirty',
      'TierWasEmpty decided',
      (x) => conditionOf(x, 'TierWasEmpty') !== undefined,
    );
    // Decision 45: unmarked files are never handed to the store; the member there stays stopped.
    assert.equal(conditionOf(b, 'TierWasEmpty')?.reason, 'ForeignContentRefused');
    assert.match(conditionOf(b, 'TierWasEmpty')!.message, /kvpool-node-1: 1 \(no marker\)/);
    assert.ok(
      existsSync(join(nodeDir('kvpool-node-1', '/var/lib/kvcache-dirty'), 'left-over.bucket')),
      'the refused files are left as they were',
    );
    const warnings = async () =>
      (
        await e.kubectl([
          'get',
          'events',
          '-A',
          '--field-selector',
          'reason=KVCacheTierNotEmpty',
          '-o',
          'jsonpath={range .items[*]}{.type} {.involvedObject.name} {.count}{"\\n"}{end}',
        ])
      ).trim();
    const events = await waitFor(async () => (await warnings()) || undefined, { what: 'the Warning event' });
    assert.deepEqual(events.split('\n'), ['Warning disk-dirty 1'], 'one Warning event on the backend');
    // The decision is written once: later passes neither repeat the event nor count it up. The
    // operator's own reconcile count says later passes ran (each backend is looked at every 15 s).
    const from = await e.reconciles('kvcachebackend');
    await waitFor(() => e.reconciles('kvcachebackend'), {
      what: 'more backend passes',
      until: (n) => n >= from + 6,
      timeoutMs: 120_000,
      intervalMs: 2000,
    });
    assert.equal(await warnings(), events, 'still one event, counted once');
    // The nodes' CPUs hold a few backends at once: what this test made goes.
    await e.kubectl(['delete', 'kvcb', 'disk-dirty', '--timeout=300s']);
  });

  it('shows a missing directory as a MembersMounted shortfall with the kubelet’s reason', async () => {
    await e.cluster.client.create(diskBackend('disk-missing', '/var/lib/kvcache-missing'));
    const b = await untilBackend(
      'disk-missing',
      'FailedMount',
      (x) => conditionOf(x, 'MembersMounted')?.reason === 'FailedMount',
    );
    assert.equal(conditionOf(b, 'MembersMounted')?.status, 'False');
    assert.match(conditionOf(b, 'MembersMounted')!.message, /hostPath type check failed/);
    assert.notEqual(b.status?.phase, 'Ready');
    await e.kubectl(['delete', 'kvcb', 'disk-missing', '--timeout=300s']);
  });

  it('shows a root-owned 0750 directory as a shortfall with the store’s message', async () => {
    for (const node of e.cluster.nodes)
      execFileSync('install', [
        '-d',
        '-o',
        '0',
        '-g',
        '0',
        '-m',
        '0750',
        nodeDir(node, '/var/lib/kvcache-root'),
      ]);
    await e.cluster.client.create(diskBackend('disk-root', '/var/lib/kvcache-root'));
    const b = await untilBackend(
      'disk-root',
      'the store’s message',
      (x) => /no write permission on directory/.test(conditionOf(x, 'MembersMounted')?.message ?? ''),
      180_000,
    );
    assert.equal(conditionOf(b, 'MembersMounted')?.status, 'False');
    console.log(
      `unwritable tier: ${conditionOf(b, 'MembersMounted')?.reason}: ${conditionOf(b, 'MembersMounted')?.message.slice(0, 200)}`,
    );
  });

  it('never empties a directory another backend’s tier also uses: a Node event says so instead', async () => {
    for (const node of e.cluster.nodes)
      writeFileSync(join(nodeDir(node, '/var/lib/kvcache-root'), 'keep-me'), 'data');
    await e.cluster.client.create(
      diskBackend('disk-shared', '/var/lib/kvcache-root', { cleanAfterDelete: true }),
    );
    await ownedByOperator('disk-shared');
    await e.kubectl(['delete', 'kvcb', 'disk-shared', '--timeout=300s']);
    for (const node of e.cluster.nodes)
      assert.deepEqual(
        readdirSync(nodeDir(node, '/var/lib/kvcache-root')),
        ['keep-me'],
        `${node}: untouched`,
      );
    const events = await waitFor(
      async () => {
        const out = await e.kubectl([
          'get',
          'events',
          '-A',
          '--field-selector',
          'reason=KVCacheTierSharedPath',
          '-o',
          'jsonpath={range .items[*]}{.involvedObject.kind}/{.involvedObject.name}: {.message}{"\\n"}{end}',
        ]);
        const lines = out.trim().split('\n').filter(Boolean).sort();
        return lines.length === e.cluster.nodes.length ? lines : undefined;
      },
      { what: 'a KVCacheTierSharedPath event on each node' },
    );
    assert.deepEqual(
      events,
      [...e.cluster.nodes]
        .sort()
        .map(
          (n) =>
            `Node/${n}: /var/lib/kvcache-root of backend disk-shared overlaps backend disk-root's tier; nothing was removed`,
        ),
    );
  });

  it('reports a node that never ran its cleanup and a cleanup that failed part way, as Node events', async () => {
    // A Node no agent serves (tainted, so no member lands there) stands for a node that is down.
    const ghost = 'kvpool-node-ghost';
    await e.cluster.client.create({
      apiVersion: 'v1',
      kind: 'Node',
      metadata: { name: ghost, labels: { kvcache: 'true', 'kubernetes.io/os': 'linux' } },
      spec: { taints: [{ key: 'kvpool.test/ghost', effect: 'NoSchedule' }] },
    } as KubeObject);
    const path = '/var/lib/kvcache-partly';
    prepare(path);
    const [one, two] = e.cluster.nodes as [string, string];
    writeFileSync(join(nodeDir(one, path), 'removable'), 'x');
    const stuck = join(nodeDir(one, path), 'immutable');
    writeFileSync(stuck, 'x');
    // Root cannot delete an immutable file: the cleanup on this node fails part way, for real.
    execFileSync('chattr', ['+i', stuck]);
    writeFileSync(join(nodeDir(two, path), 'removable'), 'x');
    try {
      await e.cluster.client.create(diskBackend('disk-partly', path, { cleanAfterDelete: true }));
      await ownedByOperator('disk-partly');
      await e.kubectl(['delete', 'kvcb', 'disk-partly', '--timeout=300s']);
      assert.deepEqual(readdirSync(nodeDir(one, path)), ['immutable'], `${one}: all but the immutable file`);
      assert.deepEqual(readdirSync(nodeDir(two, path)), [], `${two}: emptied`);
      const events = (
        await e.kubectl([
          'get',
          'events',
          '-A',
          '--field-selector',
          'involvedObject.kind=Node',
          '-o',
          'jsonpath={range .items[*]}{.reason} {.involvedObject.name}: {.message}{"\\n"}{end}',
        ])
      )
        .split('\n')
        .filter((l) => l.includes('disk-partly'))
        .sort();
      assert.deepEqual(events, [
        `KVCacheTierNotCleaned ${ghost}: ${path} for backend disk-partly could not be emptied within 20 s (the node did not run the cleanup); its content remains`,
        `KVCacheTierPartlyEmptied ${one}: emptying ${path} for backend disk-partly failed part way; some content remains`,
      ]);
    } finally {
      execFileSync('chattr', ['-i', stuck]);
      await e.cluster.client.delete({ apiVersion: 'v1', kind: 'Node', name: ghost });
    }
  });

  it('empties the directories on delete with cleanAfterDelete, and leaves them without it', async () => {
    writeFileSync(join(nodeDir('kvpool-node-2', '/var/lib/kvcache'), 'keep-me'), 'data');
    await e.kubectl(['delete', 'kvcb', 'disk-small', '--timeout=300s']);
    for (const node of e.cluster.nodes) {
      assert.ok(existsSync(nodeDir(node, '/var/lib/kvcache-small')), 'the directory itself stays');
      assert.deepEqual(readdirSync(nodeDir(node, '/var/lib/kvcache-small')), [], `${node}: emptied`);
    }
    await e.kubectl(['delete', 'kvcb', 'mooncake-disk', '--timeout=300s']);
    assert.ok(
      readdirSync(nodeDir('kvpool-node-2', '/var/lib/kvcache')).includes('keep-me'),
      'without cleanAfterDelete the content stays',
    );
  });
});
