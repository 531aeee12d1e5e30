// docs/walkthrough.md, run as written: every console block of the page, in order, one test per
// section, on the local cluster, from a directory laid out as a checkout after `npm start` (the
// project's examples/ and charts/, the cluster's root as .kvpool) in the shell getting started sets
// up. No word of the page is replaced; a transcript's output is compared by outputDifference. Then,
// on the state the page leaves after Step 6, what the page only names: the exact grant, the replicas
// sharing a prefix, the fp8 domain, `kubectl kvpool top` and `doctor`, a held deletion, and doctor
// once more with every row of the troubleshooting table made for real (tier-full aside: it needs a
// full filesystem, test/integration/tier-full.test.ts; so do the rows of replicated metadata,
// test/e2e/replicated-failover.test.ts).
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { projectRoot } from '../../images/toolchain.ts';
import type { KVCachePoolBinding } from '../../src/api/types.ts';
import type { KubeObject } from '../../src/kube/object.ts';
import type { DoctorReport } from '../../src/kubectl-kvpool/doctor.ts';
import type { StatusModel } from '../../src/kubectl-kvpool/status-model.ts';
import type { TopBackend } from '../../src/kubectl-kvpool/top-model.ts';
import { parsePrometheusText } from '../../src/store/prometheus.ts';
import { fencedBlocks, sections } from '../support/doc-blocks.ts';
import { runConsoleBlock, type Shell } from '../support/doc-runner.ts';
import { makeDoctorFaults } from '../support/doctor-faults.ts';
import { expectDeletionHeld } from '../support/held-deletion.ts';
import { conditionOf, type E2ECluster, startE2ECluster } from '../support/local-cluster.ts';
import { readyReplicas } from '../support/pods.ts';
import { seedText } from '../support/seed.ts';
import { waitFor } from '../support/wait.ts';

type Pod = KubeObject & { status?: { podIP?: string; conditions?: { type: string; status: string }[] } };
const v1 = 'worker.gpustack.ai/v1';
const run = promisify(execFile);
const page = readFileSync(join(projectRoot, 'docs', 'walkthrough.md'), 'utf8');
const steps = sections(page)
  .map((s) => ({ heading: s.heading, blocks: fencedBlocks(s.body, 'console') }))
  .filter((s) => s.blocks.length > 0);
const words = (n: number, from = 0) => Array.from({ length: n }, (_, i) => `w${from + i}`).join(' ');
const literally = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

describe('docs/walkthrough.md runs as written on the local cluster', () => {
  let e: E2ECluster;
  let shell: Shell;
  let checkout: string;
  /** The first test that failed: every later one stands on the state it should have left. */
  let failed: string | undefined;
  const step = (name: string, body: () => Promise<void>) =>
    it(name, async () => {
      if (failed) throw new Error(`not run: it stands on "${failed}", which failed`);
      try {
        await body();
      } catch (err) {
        failed = name;
        await diagnose().catch((e: unknown) => console.log(`no diagnosis: ${e}`));
        throw err;
      }
    });

  /** On a failure: whether the DRAM store changed masters or restarted, which empties it. */
  const diagnose = async () => {
    const b = await e.backend('mooncake-dram');
    const leaders = await e.kubectl([
      '-n',
      'gpustack-system',
      'get',
      'pods',
      '-l',
      'app.kubernetes.io/instance=mooncake-dram,app.kubernetes.io/component=leader',
      '-o',
      'custom-columns=NAME:.metadata.name,READY:.status.containerStatuses[0].ready,RESTARTS:.status.containerStatuses[0].restartCount,STARTED:.status.startTime',
    ]);
    console.log(
      `diagnosis: mooncake-dram lastFailover ${JSON.stringify(b.status?.lastFailover ?? null)}; conditions ${JSON.stringify(
        b.status?.conditions?.map((c) => `${c.type}=${c.status}/${c.reason}`),
      )}; default charged ${await chargedTo('default').catch((x: unknown) => String(x))}\n${leaders}`,
    );
  };
  /** `kubectl kvpool …` as a user runs it, in the page's shell. */
  const plugin = async (...args: string[]) => {
    try {
      const { stdout, stderr } = await run('kubectl', ['kvpool', ...args], {
        cwd: shell.cwd,
        env: shell.env,
        maxBuffer: 16 << 20,
      });
      return { code: 0, stdout, stderr };
    } catch (err) {
      const x = err as { code?: number; stdout?: string; stderr?: string };
      if (typeof x.code !== 'number') throw err;
      return { code: x.code, stdout: x.stdout ?? '', stderr: x.stderr ?? '' };
    }
  };
  const json = async <T>(...args: string[]) => JSON.parse((await plugin(...args, '-o', 'json')).stdout) as T;
  const binding = (namespace: string, name: string) =>
    e.cluster.client.get<KVCachePoolBinding>({ apiVersion: v1, kind: 'KVCachePoolBinding', namespace, name });
  const ready = (md: string) => readyReplicas<Pod>(e.cluster.client, md);
  const complete = async (p: Pod, prompt: string) =>
    (await (
      await fetch(`http://${p.status!.podIP}:8000/v1/completions`, {
        method: 'POST',
        body: JSON.stringify({ prompt, max_tokens: 4 }),
      })
    ).json()) as { blocks: number; hits: number; misses: number };
  /** The serving master's own /metrics, read at the address its backend reports. */
  const masterMetrics = async () => {
    const b = await e.backend('mooncake-dram');
    const admin = conditionOf(b, 'LeaderAvailable')!.message.match(/at (\S+:\d+)/)![1]!;
    return parsePrometheusText(await (await fetch(`http://${admin}/metrics`)).text());
  };
  /** What the master charges a domain (its tenant); absent when it reports none. */
  const chargedTo = async (tenant: string) =>
    (await masterMetrics())
      .get('mooncake_tenant_quota_charged_bytes')
      ?.find((s) => s.labels.tenant_id === tenant)?.value;

  before(async () => {
    e = await startE2ECluster();
    checkout = mkdtempSync(join(tmpdir(), 'kvpool-walkthrough-'));
    for (const dir of ['examples', 'charts']) symlinkSync(join(projectRoot, dir), join(checkout, dir));
    symlinkSync(e.cluster.root, join(checkout, '.kvpool'));
    // As getting started: export KUBECONFIG=$PWD/.kvpool/kubeconfig PATH=$PWD/.kvpool/bin:$PATH
    shell = {
      cwd: checkout,
      env: {
        ...process.env,
        KUBECONFIG: join(checkout, '.kvpool', 'kubeconfig'),
        PATH: `${join(checkout, '.kvpool', 'bin')}:${process.env.PATH}`,
      },
    };
  });
  after(async () => {
    await e?.stop();
    if (checkout) rmSync(checkout, { recursive: true, force: true });
  });

  it('has the six steps, each with console blocks', () =>
    assert.deepEqual(
      steps.map((s) => s.heading.split(':')[0]),
      ['Step 1', 'Step 2', 'Step 3', 'Step 4', 'Step 5', 'Step 6'],
    ));

  for (const s of steps)
    step(s.heading, async () => {
      for (const [i, block] of s.blocks.entries()) {
        const started = Date.now();
        await runConsoleBlock(block, shell, `docs/walkthrough.md, ${s.heading}, block ${i + 1}`);
        console.log(
          `${s.heading}, block ${i + 1}/${s.blocks.length}: ${((Date.now() - started) / 1000).toFixed(1)} s`,
        );
      }
    });

  step('the grant is exact where scripts read it, and readable where people do', async () => {
    const model = await json<StatusModel>('status');
    const dram = model.backends.find((b) => b.name === 'mooncake-dram')!;
    const team = dram.pools[0]!.bindings.find((b) => b.name === 'team-a')!;
    const exact = (await binding('team-a', 'team-a')).status!.effectiveQuota!;
    assert.match(String(exact), /^\d+$/, 'the status field scripts read is an exact byte count');
    assert.deepEqual(team.effective, { bytes: String(exact), display: '6.4Gi' });
  });

  step('Step 3’s replicas: a prompt sharing a prefix reads only the shared blocks', async () => {
    // Step 3's prompt is the numbers 1 to 200: this one shares its first 128 tokens, two blocks of 64.
    const [, second] = await ready('qwen-chat');
    const prefix = Array.from({ length: 128 }, (_, i) => String(i + 1)).join(' ');
    const shared = await complete(second!, `${prefix} ${words(72, 1000)}`);
    assert.deepEqual([shared.blocks, shared.hits, shared.misses], [3, 2, 1]);
  });

  step(
    'Step 6’s fp8 deployment: --kv-cache-dtype fp8_e4m3 and --block-size 16; its blocks land in qwen-fp8-v1, not default',
    async () => {
      const deploy = await e.kubectl([
        '-n',
        'team-a',
        'get',
        'deployment',
        'qwen-chat-fp8-server',
        '-o',
        'jsonpath={.spec.template.spec.containers[0].command}',
      ]);
      assert.match(deploy, /"--kv-cache-dtype","fp8_e4m3"/);
      assert.match(deploy, /"--block-size","16"/);
      const [pod] = await ready('qwen-chat-fp8');
      const defaultBefore = await chargedTo('default');
      const r = await complete(pod!, words(64, 5000));
      assert.deepEqual([r.blocks, r.misses], [4, 4]);
      const fp8 = await waitFor(async () => ((await chargedTo('qwen-fp8-v1')) ?? 0) > 0 || undefined, {
        what: 'qwen-fp8-v1 charged',
      });
      assert.ok(fp8);
      assert.equal(await chargedTo('default'), defaultBefore, 'nothing landed in the default domain');
    },
  );

  step('top: what the store reports now, per domain, read through the API server', async () => {
    const top = await plugin('top');
    console.log(`kubectl kvpool top:\n${top.stdout}`);
    assert.equal(top.code, 0, top.stderr);
    assert.match(
      top.stdout,
      /KVCacheBackend mooncake-dram \(read from Pod gpustack-system\/mooncake-dram-leader-\S+:9005 through the API server\)/,
    );
    assert.match(top.stdout, /default\s+team-a\/team-a\s+\S+\s+6\.4Gi\s+8Gi\s+no/);
    assert.match(top.stdout, /qwen-fp8-v1\s+team-a\/qwen-fp8\s+\S+\s+3\.2Gi\s+4Gi\s+no/);
    const store = (await json<TopBackend[]>('top')).find((b) => b.backend === 'mooncake-dram')!;
    // The same figures the master's own /metrics gives, read directly from the serving leader.
    const families = await masterMetrics();
    const used = families
      .get('mooncake_tenant_quota_charged_bytes')
      ?.find((s) => s.labels.tenant_id === 'default');
    assert.ok(used && used.value > 0, 'the two replicas wrote under the default domain');
    const row = store.domains.find((d) => d.domain === 'default')!;
    assert.equal(row.usage?.bytes, String(used.value));
    assert.ok((store.lookups.hits ?? 0) >= 3, 'the second replica read the three blocks the first wrote');
    assert.equal(store.lookups.total, families.get('total_get_nums_')?.[0]?.value);
  });

  step('doctor after Step 6: nothing wrong, the oversubscription said to be expected', async () => {
    const d = await plugin('doctor');
    assert.equal(d.code, 0, d.stdout);
    assert.match(d.stdout, /^• Ceilings past the pool's total/m);
    assert.match(d.stdout, /KVCachePool\/shared-dram — info: .*\n(.*\n)*\s+fix: not a fault/);
    assert.match(d.stdout, /Nothing is wrong\.\n$/);
    // The operator read every tier member's GET /tier through the store's NetworkPolicy.
    const tier = conditionOf(await e.backend('mooncake-disk'), 'TierWritable');
    assert.equal(tier?.status, 'True', JSON.stringify(tier));
    assert.match(
      tier!.message,
      /\(2 members\); least room on kvpool-node-\d: \S+ free of \S+ at \/var\/lib\/kvcache/,
    );
  });

  step('holds the Binding’s deletion while the deployment exists, and leaves its replicas running', () =>
    expectDeletionHeld(e, async () => (await ready('qwen-chat')).map((p) => p.metadata.uid!).sort()),
  );

  step(
    'doctor: every row of the troubleshooting table but tier-full, each fault made for real, with evidence and fix',
    async () => {
      // The nodes' CPUs hold Step 6 and these faults only with one leader and one store: Step 4 is
      // undone and Step 5's backend removed first.
      await e.kubectl(['apply', '--server-side', '-f', '-'], seedText('step-1-store.yaml'));
      await e.kubectl(['delete', 'kvcb', 'mooncake-disk', '--timeout=300s']);
      const raced = await makeDoctorFaults(e);
      const expected: [string, string, RegExp][] = [
        ['leader-unavailable', 'KVCacheBackend/bad-image', /ErrImagePull|ImagePullBackOff/],
        ['member-shortfall', 'KVCacheBackend/disk-missing', /FailedMount/],
        ['member-shortfall', 'KVCacheBackend/nowhere', /NoSegments/],
        ['tier-directory', 'KVCacheBackend/disk-missing', /hostPath type check failed/],
        ['tier-directory', 'KVCacheBackend/disk-faults', /no write permission on directory/],
        ['preexisting-tier-content', 'KVCacheBackend/disk-faults', /kvpool-node-1: 1/],
        ['pool-backend', 'KVCachePool/empty-pool', /NothingToAllocate/],
        ['ledger-unavailable', 'KVCachePool/bad-pool', /LedgerUnreachable/],
        ['oversubscription', 'KVCachePool/shared-dram', /Oversubscribed/],
        ['zero-grant', 'KVCachePoolBinding/team-b/starved', /ZeroGranted/],
        ['domain-claimed-twice', `KVCachePoolBinding/${raced[0]}`, /DomainClaimedByMultipleBindings/],
        ['domain-claimed-twice', `KVCachePoolBinding/${raced[1]}`, /DomainClaimedByMultipleBindings/],
        ['deletion-held', 'KVCachePoolBinding/team-a/team-a', /HeldByWorkloads.*ModelDeployment\/qwen-chat/],
        ['version-mismatch', 'ModelDeployment/team-b/sglang-chat', /0\.3\.12/],
      ];
      let missing: string[] = [];
      const report = await waitFor(
        async () => {
          const r = await json<DoctorReport>('doctor');
          missing = expected
            .filter(([id, object, evidence]) => {
              const f = r.checks.find((c) => c.id === id)?.findings.find((x) => x.object === object);
              return !f || !evidence.test([f.summary, ...f.evidence].join('\n'));
            })
            .map(([id, object]) => `${id} on ${object}`);
          return missing.length === 0 ? r : undefined;
        },
        { what: 'a finding for every row', timeoutMs: 300_000 },
      ).catch((err: unknown) => {
        throw new Error(`no finding yet for ${missing.join('; ')}: ${err}`);
      });
      assert.equal(report.healthy, false);
      const d = await plugin('doctor');
      console.log(`kubectl kvpool doctor with every row's fault:\n${d.stdout}`);
      assert.equal(d.code, 1, 'exits non-zero when something is wrong');
      // Every check prints its title; tier-full, made for real in test/integration/tier-full.test.ts
      // (it needs a full filesystem under a tier), passes here: the tiers of these nodes have room; so
      // do the rows of replicated metadata (test/e2e/replicated-failover.test.ts): no store here has it.
      const elsewhere = ['tier-full', 'oplog-not-followed', 'etcd-quorum'];
      for (const c of report.checks) {
        const mark = elsewhere.includes(c.id) ? '✔' : '[✖!•]';
        assert.match(d.stdout, new RegExp(`^${mark} ${literally(c.title)}$`, 'm'));
      }
      assert.match(
        d.stdout,
        /fix: create it on that node, .*install -d -o 65532 -g 0 -m 0750 \/var\/lib\/kvcache-missing/,
      );
      assert.match(d.stdout, /fix: give the directory to the image's user .*\/var\/lib\/kvcache-faults/);
      assert.match(d.stdout, /fix: .*spec\.image/);
      assert.match(d.stdout, /fix: delete the ModelDeployments named first/);
      assert.match(d.stdout, /fix: two creates raced past admission: delete one of the Bindings/);
      const status = await plugin('status');
      assert.match(
        status.stdout,
        /KVCacheBackend disk-missing {2}Degraded.*\n(.*\n)*?.*✖ FailedMount: .*hostPath type check failed/,
      );
      assert.match(
        status.stdout,
        /KVCachePoolBinding team-b\/starved {2}Error {2}domain starved\n.*usage \S+ · grant 0 · ceiling 512Mi/,
      );
    },
  );
});
