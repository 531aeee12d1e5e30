// `kubectl kvpool`'s pure parts on a snapshot read from a local cluster after the walkthrough's Step 6
// with faults made for real (a bad image, missing, unwritable and dirty tier directories, a store with
// no member, two Bindings racing for a domain, a held deletion, an SGLang engine on the 0.3.13 store):
// status, doctor and top as recorded, and the figures a person must never misread.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import type { ModelDeployment } from '../../src/api/types.ts';
import { doctor } from '../../src/cli/plugin/doctor.ts';
import { renderDoctor } from '../../src/cli/plugin/render-doctor.ts';
import { quotaBar, renderStatus } from '../../src/cli/plugin/render-status.ts';
import { renderTop } from '../../src/cli/plugin/render-top.ts';
import type { Snapshot } from '../../src/cli/plugin/snapshot.ts';
import { figure, statusModel } from '../../src/cli/plugin/status-model.ts';
import { type Scrape, topModel } from '../../src/cli/plugin/top-model.ts';
import { clientLine, engineVersion, storeLine } from '../../src/cli/plugin/version-lines.ts';
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
        ? { source: 'Pod gpustack-system/mooncake-dram-leader:9003 through the API server', text: metrics }
        : { source: `Pod gpustack-system/${b.metadata.name}-leader:9003 through the API server`, text: '' },
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
});

const formatOf = (bytes: string) => figure(bytes)!.display;

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
