// `kubectl kvpool`'s pure parts on a snapshot read from a local cluster after the walkthrough's Step 6
// with faults made for real (a bad image, missing, unwritable and dirty tier directories, a store with
// no member, two Bindings racing for a domain, a held deletion, an SGLang engine on the 0.3.13 store):
// status, doctor and top as recorded, and the figures a person must never misread.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { kinds } from '../../src/api/kinds.ts';
import type { KVCacheBackend, ModelDeployment } from '../../src/api/types.ts';
import { doctor } from '../../src/kubectl-kvpool/doctor.ts';
import { renderDoctor } from '../../src/kubectl-kvpool/render-doctor.ts';
import { quotaBar, renderStatus } from '../../src/kubectl-kvpool/render-status.ts';
import { renderTop } from '../../src/kubectl-kvpool/render-top.ts';
import type { Snapshot } from '../../src/kubectl-kvpool/snapshot.ts';
import { figure, statusModel } from '../../src/kubectl-kvpool/status-model.ts';
import { type Scrape, topModel } from '../../src/kubectl-kvpool/top-model.ts';
import { clientLine, engineVersion, storeLine } from '../../src/kubectl-kvpool/version-lines.ts';
import { withDisplayFigures } from '../../src/vocabulary/display-figures.ts';
import { goldenTests, goldenTextTests } from './golden.ts';

const fixtures = new URL('./fixtures/plugin/', import.meta.url);
const snapshot = JSON.parse(readFileSync(new URL('faults-after-step-6.json', fixtures), 'utf8')) as Snapshot;
const metrics = readFileSync(new URL('mooncake-dram-metrics.txt', fixtures), 'utf8');
const scrapes = new Map<string, Scrape>(
  snapshot.backends.map((b) => [
    b.metadata.name!,
    b.metadata.name === 'bad-image'
      ? { error: 'no leader Pod is ready' }
      : b.metadata.name === 'mooncake-dram'
        ? { source: 'Pod gpustack-system/mooncake-dram-leader:9005 through the API server', text: metrics }
        : { source: `Pod gpustack-system/${b.metadata.name}-leader:9005 through the API server`, text: '' },
  ]),
);
const golden = new URL('./golden/plugin/', import.meta.url);

describe('kubectl kvpool renders', () => {
  goldenTextTests(golden, { status: snapshot }, (s) => renderStatus(statusModel(s)));
  goldenTextTests(golden, { doctor: snapshot }, (s) => renderDoctor(doctor(s)));
  goldenTextTests(golden, { top: snapshot }, (s) => renderTop(topModel(s, scrapes)));
  goldenTests(golden, { 'status-json': snapshot }, (s) => statusModel(s));
});

describe('kubectl kvpool doctor', () => {
  const report = doctor(snapshot);
  const findings = (id: string) => report.checks.find((c) => c.id === id)!.findings;
  const on = (id: string, object: string) => findings(id).find((f) => f.object === object);

  it('walks every row of the troubleshooting table and finds each fault on its object', () => {
    assert.deepEqual(
      report.checks.map((c) => c.id),
      [
        'leader-unavailable',
        'member-shortfall',
        'tier-directory',
        'preexisting-tier-content',
        'tier-full',
        'oplog-not-followed',
        'etcd-quorum',
        'pool-backend',
        'ledger-unavailable',
        'oversubscription',
        'zero-grant',
        'domain-claimed-twice',
        'deletion-held',
        'version-mismatch',
      ],
    );
    assert.equal(on('leader-unavailable', 'KVCacheBackend/bad-image')?.severity, 'error');
    assert.match(on('leader-unavailable', 'KVCacheBackend/bad-image')!.fix, /spec\.image/);
    assert.equal(on('member-shortfall', 'KVCacheBackend/nowhere')?.severity, 'error');
    assert.match(
      on('tier-directory', 'KVCacheBackend/disk-missing')!.fix,
      /install -d -o 65532 -g 0 -m 0750 \/var\/lib\/kvcache-missing/,
    );
    assert.match(
      on('tier-directory', 'KVCacheBackend/disk-root')!.summary,
      /cannot write \/var\/lib\/kvcache-root/,
    );
    assert.equal(on('preexisting-tier-content', 'KVCacheBackend/disk-dirty')?.severity, 'warning');
    assert.equal(on('ledger-unavailable', 'KVCachePool/bad-pool')?.severity, 'error');
    assert.equal(on('oversubscription', 'KVCachePool/shared-dram')?.severity, 'info');
    assert.equal(on('zero-grant', 'KVCachePoolBinding/team-b/starved')?.severity, 'error');
    assert.equal(findings('domain-claimed-twice').length, 4);
    assert.match(on('deletion-held', 'KVCachePoolBinding/team-a/team-a')!.evidence[0]!, /HeldByWorkloads/);
    assert.match(
      on('version-mismatch', 'ModelDeployment/team-a/sglang-chat')!.summary,
      /0\.3\.12 client.*0\.3\.13 line/,
    );
    assert.equal(report.healthy, false);
  });

  it('names the purge-on-delete command for a deleted Binding whose domain holds data', () => {
    const held = structuredClone(
      snapshot.bindings.find((b) => b.metadata.namespace === 'team-a' && b.metadata.name === 'team-a')!,
    );
    held.status!.conditions = [
      {
        type: 'Releasable',
        status: 'False',
        reason: 'LedgerNotReleased',
        message: 'KVCachePoolBinding team-a/team-a is not released: domain default holds 3Mi on the master',
        lastTransitionTime: '2025-01-01T00:00:00Z',
      },
    ];
    const found = doctor({ ...snapshot, bindings: [held] })
      .checks.find((c) => c.id === 'deletion-held')!
      .findings.find((f) => f.object === 'KVCachePoolBinding/team-a/team-a');
    assert.match(
      found!.fix,
      /kubectl annotate kvcachepoolbinding team-a -n team-a kvcache\.gpustack\.ai\/purge-on-delete=true$/,
    );
  });

  it('warns when no standby follows the OpLog and fails an etcd without a quorum', () => {
    const replicated = structuredClone(snapshot.backends.find((b) => b.metadata.name === 'mooncake-dram')!);
    const at = '2025-01-01T00:00:00Z';
    replicated.status!.conditions = [
      {
        type: 'MetadataReplicated',
        status: 'False',
        reason: 'NoStandby',
        message:
          'no standby follows the OpLog (no standby runs): a failover now would start with an empty index',
        lastTransitionTime: at,
      },
      {
        type: 'EtcdAvailable',
        status: 'False',
        reason: 'QuorumLost',
        message: '1 of 3 members healthy',
        lastTransitionTime: at,
      },
    ];
    const r = doctor({ ...snapshot, backends: [replicated] });
    const finding = (id: string) => r.checks.find((c) => c.id === id)!.findings[0];
    assert.equal(finding('oplog-not-followed')?.severity, 'warning');
    assert.match(finding('oplog-not-followed')!.fix, /leader\.replicas/);
    assert.equal(finding('etcd-quorum')?.severity, 'error');
    assert.match(finding('etcd-quorum')!.evidence.join('\n'), /1 of 3 members healthy/);
  });

  it('makes a refused tier an error, and sends a member stopped by it to that row', () => {
    const dirty = snapshot.backends.find((b) => b.metadata.name === 'disk-dirty')!;
    const at = '2025-01-01T00:00:00Z';
    const refused = {
      ...dirty,
      status: {
        ...dirty.status,
        conditions: [
          ...(dirty.status?.conditions ?? []).filter(
            (c) => !['TierWasEmpty', 'MembersMounted'].includes(c.type),
          ),
          {
            type: 'TierWasEmpty',
            status: 'False' as const,
            reason: 'ForeignContentRefused',
            message:
              'the tier directory holds files this backend did not write on kvpool-node-1: 1 (no marker)',
            lastTransitionTime: at,
          },
          {
            type: 'MembersMounted',
            status: 'False' as const,
            reason: 'MemberInitCrashLooping',
            message:
              'member Pod disk-dirty-member-0-x on kvpool-node-1: container local-disk-survey restarted 3 times, last exit code 1: entries=1 control=20 tier=refused marker=none',
            lastTransitionTime: at,
          },
        ],
      },
    };
    const report = doctor({ ...snapshot, backends: [refused] });
    const on = (id: string) =>
      report.checks.find((c) => c.id === id)?.findings.find((f) => f.object === 'KVCacheBackend/disk-dirty');
    assert.equal(on('preexisting-tier-content')?.severity, 'error');
    assert.match(on('preexisting-tier-content')!.fix, /foreignContent: Remove/);
    assert.match(on('member-shortfall')!.fix, /see the preexisting-tier-content row/);
  });

  it('calls a cluster with only expected states healthy', () => {
    const quiet = doctor({
      ...snapshot,
      backends: [],
      bindings: [],
      deployments: [],
      pools: snapshot.pools.filter((p) => p.metadata.name === 'shared-dram'),
    });
    assert.equal(quiet.healthy, true, JSON.stringify(quiet.checks.filter((c) => c.findings.length)));
  });
});

describe('figures people read', () => {
  it('draws a grant the store did not report as not reported, never as zero', () => {
    const ceiling = figure('8Gi')!;
    assert.equal(
      quotaBar(ceiling),
      `[${'░'.repeat(24)}] usage not reported · grant not reported · ceiling 8Gi`,
    );
    assert.equal(
      quotaBar(ceiling, figure(0), figure(0)),
      `[${'░'.repeat(24)}] usage 0 · grant 0 · ceiling 8Gi`,
    );
    assert.equal(
      quotaBar(ceiling, figure('6871947674'), figure(393216)),
      `[█${'▒'.repeat(18)}${'░'.repeat(5)}] usage 384Ki · grant 6.4Gi · ceiling 8Gi`,
    );
  });

  it('keeps exact byte counts in the JSON scripts read', () => {
    const team = statusModel(snapshot)
      .backends.find((b) => b.name === 'mooncake-dram')!
      .pools[0]!.bindings.find((b) => b.name === 'team-b')!;
    assert.match(team.effective!.bytes, /^\d+$/);
    assert.equal(team.effective!.display, formatOf(team.effective!.bytes));
  });

  it('prints a backend’s capacity as `kubectl get kvcb` does: the same field, the same figure', () => {
    // Step 5's disk store: two members of 8Gi memory and a 100Gi tier each, as the master reports them.
    const column = kinds.KVCacheBackend.columns.find((c) => c.name === 'Capacity')!;
    assert.equal(column.jsonPath, '.status.display.capacity');
    const dram = snapshot.backends.find((b) => b.metadata.name === 'mooncake-dram')!;
    for (const total of ['16Gi', '216Gi']) {
      const status = withDisplayFigures('KVCacheBackend', {
        ...dram.status,
        capacity: { total, used: '0' },
      }) as NonNullable<KVCacheBackend['status']> & { display?: { capacity?: string } };
      const disk = { ...dram, metadata: { ...dram.metadata, name: 'mooncake-disk' }, status };
      const printed = renderStatus(statusModel({ ...snapshot, backends: [disk] }));
      assert.equal(status.display?.capacity, total);
      assert.match(printed, new RegExp(`^KVCacheBackend mooncake-disk .* capacity ${total} `, 'm'));
    }
  });
});

const formatOf = (bytes: string) => figure(bytes)!.display;

describe('prompt tokens served from the pool', () => {
  // The recorded snapshot, with the figures the operator writes once engines have served from the pool.
  const served: Snapshot = structuredClone(snapshot);
  const chat = served.deployments.find((m) => m.metadata.name === 'qwen-chat')!;
  chat.status = { ...chat.status, poolPrefix: { hitTokens: 768, queriedTokens: 1536, hitRatio: '0.5' } };
  const sglang = served.deployments.find((m) => m.metadata.name === 'sglang-chat')!;
  sglang.status = { ...sglang.status, poolPrefix: { hitTokens: 64 } };
  const teamA = served.bindings.find(
    (b) => b.metadata.name === 'team-a' && b.metadata.namespace === 'team-a',
  )!;
  teamA.status = { ...teamA.status, poolPrefix: { hitTokens: 832, queriedTokens: 1536, hitRatio: '0.5' } };

  it('status shows them under each ModelDeployment and Binding, and says so when not reported', () => {
    const text = renderStatus(statusModel(served));
    assert.match(
      text,
      /KVCachePoolBinding team-a\/team-a .*\n.*\n.*prompt tokens served from the pool: 832 of 1536 looked up \(50\.0%\)/,
    );
    assert.match(
      text,
      /qwen-chat .*\n.*prompt tokens served from the pool: 768 of 1536 looked up \(50\.0%\)/,
    );
    assert.match(text, /sglang-chat .*\n.*prompt tokens served from the pool: 64\n/);
    assert.match(text, /qwen-chat-fp8 .*\n.*prompt tokens served from the pool: not reported/);
  });

  it('top shows them per domain, — when not reported', () => {
    const text = renderTop(topModel(served, scrapes));
    assert.match(text, /default\s+team-a\/team-a\s+384Ki\s+6\.1Gi\s+8Gi\s+no\s+832\s+50\.0%/);
    assert.match(text, /llama-8b-v1\s+team-b\/team-b\s+0\s+6\.1Gi\s+8Gi\s+no\s+—\s+—/);
  });

  it('-o json carries the status figures as they are', () => {
    const team = statusModel(served)
      .backends.find((b) => b.name === 'mooncake-dram')!
      .pools[0]!.bindings.find((b) => b.name === 'team-a')!;
    assert.deepEqual(team.poolPrefix, { hitTokens: 832, queriedTokens: 1536, hitRatio: '0.5' });
    assert.deepEqual(team.deployments.find((m) => m.name === 'qwen-chat')?.poolPrefix, {
      hitTokens: 768,
      queriedTokens: 1536,
      hitRatio: '0.5',
    });
  });
});

describe('engine and store version lines', () => {
  it('reads the Mooncake line from the store image tags in use', () => {
    assert.equal(storeLine('kvpool/kvpool-store:0.1.0-mooncake0.3.13.post1'), '0.3.13');
    assert.equal(storeLine('gpustack/mirrored-mooncake:0.3.13.post1-cpu'), '0.3.13');
    assert.equal(storeLine('kvcacheai/mooncake:0.3.12.post1'), '0.3.12');
    assert.equal(storeLine('registry.example.com/store:1.0'), undefined);
  });

  it('reads the engine version from the image tag, else spec.engine.version, and knows its client line', () => {
    const md = (engine: ModelDeployment['spec']['engine']) =>
      ({ spec: { engine, roles: [{ name: 's' }] } }) as unknown as ModelDeployment;
    assert.equal(engineVersion(md({ name: 'vLLM', image: 'gpustack/runner:cuda13.0-vllm0.29.0' })), '0.29.0');
    assert.equal(engineVersion(md({ name: 'SGLang', version: '0.5.18' })), '0.5.18');
    assert.equal(clientLine('vLLM', '0.29.0'), '0.3.13');
    assert.equal(clientLine('SGLang', '0.5.18'), '0.3.12');
    assert.equal(clientLine('SGLang', '0.5.180'), undefined);
    assert.equal(clientLine('vLLM', undefined), undefined);
  });
});

describe('the last failover', () => {
  // The recorded snapshot, with the failovers the operator records on a disk-tier store and a DRAM one.
  const failed: Snapshot = structuredClone(snapshot);
  const dram = failed.backends.find((b) => b.metadata.name === 'mooncake-dram')!;
  const disk: KVCacheBackend = structuredClone(dram);
  disk.metadata.name = 'mooncake-disk';
  const at = '2026-12-02T11:00:00.800Z';
  disk.status = {
    ...disk.status,
    lastFailover: {
      at,
      master: '10.0.0.7:9003',
      tierObjectsBefore: 128,
      tierBytesBefore: '32Mi',
      reRegisteredObjects: 128,
      reRegisteredBytes: '32Mi',
      warmAt: '2026-12-02T11:00:02.200Z',
    },
  };
  dram.status = { ...dram.status, lastFailover: { at, master: '10.0.0.8:9003' } };
  failed.backends.push(disk);

  it('status says what came back of what was on the tier and when it was warm, and what a DRAM store lost', () => {
    const text = renderStatus(statusModel(failed));
    assert.match(
      text,
      /KVCacheBackend mooncake-disk .*\n.*leader: .*\n.*last failover 2026-12-02T11:00:00\.800Z \(new master 10\.0\.0\.7:9003\): re-registered 128 objects, 32Mi of 128 objects, 32Mi on the tier before; warm 1\.4 s after/,
    );
    assert.match(
      text,
      /KVCacheBackend mooncake-dram .*\n.*leader: .*\n.*last failover 2026-12-02T11:00:00\.800Z \(new master 10\.0\.0\.8:9003\): keys held in memory were lost; no disk tier figures to re-register/,
    );
  });

  it('status says what memory kept across the change: all of it with replicated metadata, nothing without', () => {
    const replicated: Snapshot = structuredClone(failed);
    const b = replicated.backends.find((x) => x.metadata.name === 'mooncake-dram')!;
    b.status!.lastFailover = {
      at,
      master: '10.0.0.8:9003',
      dramKeysBefore: 200,
      dramBytesBefore: '25Mi',
      dramKeysAfter: 200,
      dramBytesAfter: '25Mi',
    };
    assert.match(
      renderStatus(statusModel(replicated)),
      /last failover 2026-12-02T11:00:00\.800Z \(new master 10\.0\.0\.8:9003\): memory kept: 200 objects, 25Mi before, 200 objects, 25Mi after\n/,
    );
    b.status!.lastFailover = { ...b.status!.lastFailover, dramKeysAfter: 0, dramBytesAfter: '0' };
    assert.match(
      renderStatus(statusModel(replicated)),
      /memory lost: 200 objects, 25Mi before, 0 objects, 0 after/,
    );
  });

  it('status says a re-registration under way, and a figure the master did not report', () => {
    const open: Snapshot = structuredClone(failed);
    open.backends.find((b) => b.metadata.name === 'mooncake-disk')!.status!.lastFailover = {
      at,
      master: '10.0.0.7:9003',
      reRegisteredObjects: 64,
    };
    assert.match(
      renderStatus(statusModel(open)),
      /last failover .*: re-registering, 64 objects, bytes not reported so far\n/,
    );
  });

  it('top prints the same line, and -o json carries the figures exact with the seconds to warm', () => {
    assert.match(
      renderTop(topModel(failed, scrapes)),
      /\n {2}last failover .*: re-registered 128 objects, 32Mi/,
    );
    const node = statusModel(failed).backends.find((b) => b.name === 'mooncake-disk')!.lastFailover;
    assert.deepEqual(node, {
      at,
      master: '10.0.0.7:9003',
      tierObjectsBefore: 128,
      tierBytesBefore: { bytes: '33554432', display: '32Mi' },
      reRegisteredObjects: 128,
      reRegisteredBytes: { bytes: '33554432', display: '32Mi' },
      warmAt: '2026-12-02T11:00:02.200Z',
      warmSeconds: 1.4,
    });
  });
});
