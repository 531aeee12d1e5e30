// `kubectl kvpool` on the local cluster, found by kubectl itself on the PATH (.kvpool/bin): status and
// top of the walkthrough after Step 6, and doctor with every row of the troubleshooting table produced
// for real in one cluster — a leader image that cannot be pulled (and its pool's ledger), a missing,
// an unwritable and a dirty tier directory, a store no member joins (its grant is zero), two Bindings
// racing for one domain, a deletion held by a workload, and an SGLang engine on the 0.3.13 store.

import assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { localInstanceType } from '../../local/cluster.ts';
import type { KVCachePoolBinding } from '../../src/api/types.ts';
import type { DoctorReport } from '../../src/cli/plugin/doctor.ts';
import type { StatusModel } from '../../src/cli/plugin/status-model.ts';
import type { TopBackend } from '../../src/cli/plugin/top-model.ts';
import type { KubeObject } from '../../src/kube/object.ts';
import { parsePrometheusText } from '../../src/store/prometheus.ts';
import { type E2ECluster, startE2ECluster } from '../support/local-cluster.ts';
import { seedText } from '../support/seed.ts';
import { waitFor } from '../support/wait.ts';

type Pod = KubeObject & { status?: { podIP?: string; conditions?: { type: string; status: string }[] } };
const v1 = 'worker.gpustack.ai/v1';
const ns = 'gpustack-system';
const run = promisify(execFile);

describe('kubectl kvpool on the local cluster', () => {
  let e: E2ECluster;
  /** `kubectl kvpool …` as a user runs it: the local cluster's kubectl, its bin on the PATH. */
  const plugin = async (...args: string[]) => {
    const bin = join(e.cluster.root, 'bin');
    try {
      const { stdout, stderr } = await run(join(bin, 'kubectl'), ['kvpool', ...args], {
        env: { ...process.env, PATH: `${bin}:${process.env.PATH}`, KUBECONFIG: e.cluster.kubeconfigPath },
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
  const ready = async (namespace: string, md: string) =>
    (
      await e.cluster.client.list<Pod>(
        { apiVersion: 'v1', kind: 'Pod', namespace },
        { labelSelector: `app.kubernetes.io/instance=${md}` },
      )
    ).items.filter(
      (p) =>
        p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') &&
        !p.metadata.deletionTimestamp,
    );
  const binding = (namespace: string, name: string) =>
    e.cluster.client.get<KVCachePoolBinding>({ apiVersion: v1, kind: 'KVCachePoolBinding', namespace, name });
  const apply = (text: string) => e.kubectl(['apply', '--server-side', '-f', '-'], text);

  before(async () => {
    e = await startE2ECluster({
      nodeLabels: { 'kvpool-node-1': { kvcache: 'true' }, 'kvpool-node-2': { kvcache: 'true' } },
    });
    await e.kubectl(['create', 'namespace', 'team-a']);
    await e.kubectl(['create', 'namespace', 'team-b']);
  });
  after(() => e?.stop());

  it('status: the walkthrough after Step 6 as one tree, with grants as people write them', async () => {
    for (const step of ['step-1-store.yaml', 'step-2-pool-binding.yaml']) await apply(seedText(step));
    // In the walkthrough's order: the workload once its Binding is granted.
    await waitFor(
      async () => ((await binding('team-a', 'team-a')).status?.phase === 'Ready' ? true : undefined),
      { what: 'the Binding Ready', timeoutMs: 120_000 },
    );
    await apply(seedText('step-3-workload.yaml', localInstanceType));
    const pods = await waitFor(
      async () => {
        const r = await ready('team-a', 'qwen-chat');
        return r.length === 2 ? r : undefined;
      },
      { what: 'two ready qwen-chat replicas', timeoutMs: 180_000 },
    );
    const prompt = Array.from({ length: 200 }, (_, i) => `w${i}`).join(' ');
    const complete = async (p: Pod) =>
      (await (
        await fetch(`http://${p.status!.podIP}:8000/v1/completions`, {
          method: 'POST',
          body: JSON.stringify({ prompt, max_tokens: 4 }),
        })
      ).json()) as { hits: number; misses: number };
    const first = await complete(pods[0]!);
    const second = await complete(pods[1]!);
    assert.deepEqual(
      [first.misses, second.hits],
      [3, 3],
      'the second replica reads the blocks the first wrote',
    );
    await apply(seedText('step-4-ha.yaml'));
    await apply(seedText('step-6-second-team.yaml', localInstanceType));
    await waitFor(
      async () => {
        const [a, b, fp8] = await Promise.all([
          binding('team-a', 'team-a'),
          binding('team-b', 'team-b'),
          binding('team-a', 'qwen-fp8'),
        ]);
        const leaders = await e.kubectl([
          '-n',
          ns,
          'get',
          'deployment',
          'mooncake-dram-leader',
          '--no-headers',
        ]);
        const md = await e.kubectl([
          '-n',
          'team-a',
          'get',
          'md',
          'qwen-chat',
          '-o',
          'jsonpath={.status.conditions[?(@.type=="CacheAttached")].status}',
        ]);
        return /^mooncake-dram-leader\s+1\/3\s/.test(leaders) &&
          (await ready('team-a', 'qwen-chat-fp8')).length === 1 &&
          [a, b, fp8].every((x) => x.status?.phase === 'Ready' && x.status.display?.effectiveQuota) &&
          a.status?.display?.effectiveQuota === '6.4Gi' &&
          fp8.status?.display?.effectiveQuota === '3.2Gi' &&
          a.status?.usage !== '0' &&
          md === 'True'
          ? true
          : undefined;
      },
      {
        what: 'Step 6 settled: 3 leaders with 1 ready, the fp8 replica, every grant recut, the cache attached',
        timeoutMs: 240_000,
      },
    );

    const status = await plugin('status');
    console.log(`kubectl kvpool status, the walkthrough after Step 6:\n${status.stdout}`);
    assert.equal(status.code, 0, status.stderr);
    const out = status.stdout;
    assert.match(out, /^KVCacheBackend mooncake-dram {2}Ready {2}capacity 16Gi \(\S+ used\)$/m);
    assert.match(
      out,
      /leader: elected \S+:50051, Pod mooncake-dram-leader-\S+ on kvpool-node-[12]; 3 replicas, 1 ready/,
    );
    for (const node of e.cluster.nodes)
      assert.match(out, new RegExp(`${node} {2}mooncake-dram-member-0-\\S+ ready {2}segment OK`));
    assert.match(out, /KVCachePool shared-dram {2}Ready {2}quota 16Gi {2}usage \S+/);
    assert.match(
      out,
      /• QuotaWithinTotal=False \(Oversubscribed\): the Bindings' ceilings sum to 20Gi, past the pool's quota\.total of 16Gi/,
    );
    assert.match(
      out,
      /KVCachePoolBinding team-a\/team-a {2}Ready {2}domain default\n.*\[█▒+░+\] usage \S+ · grant 6\.4Gi · ceiling 8Gi/,
    );
    assert.match(
      out,
      /KVCachePoolBinding team-b\/team-b {2}Ready {2}domain llama-8b-v1\n.*grant 6\.4Gi · ceiling 8Gi/,
    );
    assert.match(
      out,
      /KVCachePoolBinding team-a\/qwen-fp8 {2}Ready {2}domain qwen-fp8-v1\n.*grant 3\.2Gi · ceiling 4Gi/,
    );
    assert.match(
      out,
      /ModelDeployment team-a\/qwen-chat {2}Ready {2}vLLM {2}2S {2}CacheAttached=True \(CacheActive\)/,
    );
    assert.match(out, /ModelDeployment team-a\/qwen-chat-fp8 {2}Ready {2}vLLM {2}1S/);
    assert.doesNotMatch(out, /✖/, 'nothing is wrong after Step 6');

    // Scripts keep the exact grant; people read 6.4Gi in the JSON's display and in kubectl get.
    const model = await json<StatusModel>('status');
    const team = model.backends[0]!.pools[0]!.bindings.find((b) => b.name === 'team-a')!;
    const exact = (await binding('team-a', 'team-a')).status!.effectiveQuota!;
    assert.match(String(exact), /^\d+$/, 'the status field scripts read is an exact byte count');
    assert.deepEqual(team.effective, { bytes: String(exact), display: '6.4Gi' });
    assert.match(
      await e.kubectl(['-n', 'team-a', 'get', 'kvcpb', 'team-a', '--no-headers']),
      /^team-a\s+shared-dram\s+default\s+6\.4Gi\s+\S+\s+Ready\s/,
    );
  });

  it('top: what the store reports now, per domain, read through the API server', async () => {
    const top = await plugin('top');
    console.log(`kubectl kvpool top:\n${top.stdout}`);
    assert.equal(top.code, 0, top.stderr);
    assert.match(
      top.stdout,
      /KVCacheBackend mooncake-dram \(read from Pod gpustack-system\/mooncake-dram-leader-\S+:9005 through the API server\)/,
    );
    assert.match(top.stdout, /default\s+team-a\/team-a\s+\S+\s+6\.4Gi\s+8Gi\s+no/);
    assert.match(top.stdout, /qwen-fp8-v1\s+team-a\/qwen-fp8\s+\S+\s+3\.2Gi\s+4Gi\s+no/);
    const [store] = await json<TopBackend[]>('top');
    // The same figures the master's own /metrics gives, read directly from the serving leader.
    const leader = (
      await e.cluster.client.list<Pod>(
        { apiVersion: 'v1', kind: 'Pod', namespace: ns },
        { labelSelector: 'app.kubernetes.io/instance=mooncake-dram,app.kubernetes.io/component=leader' },
      )
    ).items.find((p) => p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'))!;
    const families = parsePrometheusText(
      await (await fetch(`http://${leader.status!.podIP}:9003/metrics`)).text(),
    );
    const charged = families
      .get('mooncake_tenant_quota_charged_bytes')
      ?.find((s) => s.labels.tenant_id === 'default');
    assert.ok(charged && charged.value > 0, 'the two replicas wrote under the default domain');
    const row = store!.domains.find((d) => d.domain === 'default')!;
    assert.equal(row.usage?.bytes, String(charged.value));
    assert.ok((store!.lookups.hits ?? 0) >= 3, 'the second replica read the three blocks the first wrote');
    assert.equal(store!.lookups.total, families.get('total_get_nums_')?.[0]?.value);
  });

  it('doctor after Step 6: nothing wrong, the oversubscription said to be expected', async () => {
    const d = await plugin('doctor');
    assert.equal(d.code, 0, d.stdout);
    assert.match(d.stdout, /^• Ceilings past the pool's total/m);
    assert.match(d.stdout, /KVCachePool\/shared-dram — info: .*\n(.*\n)*\s+fix: not a fault/);
    assert.match(d.stdout, /Nothing is wrong\.\n$/);
  });

  it('doctor: every row of the troubleshooting table, each fault made for real, with evidence and fix', async () => {
    // The nodes' CPUs hold Step 6 and these faults only with one leader: Step 4 is undone first.
    await apply(seedText('step-1-store.yaml'));
    const root = e.cluster.root;
    const dir = (node: string, path: string) => join(root, 'nodes', node, path);
    const [one, two] = e.cluster.nodes as [string, string];
    for (const node of e.cluster.nodes) mkdirSync(dir(node, '/var/lib'), { recursive: true });
    // One tier path, two faults: on one node it holds an earlier backend's file, on the other the
    // store's user cannot write it.
    const faults = '/var/lib/kvcache-faults';
    execFileSync('install', ['-d', '-o', '65532', '-g', '0', '-m', '0750', dir(one, faults)]);
    writeFileSync(join(dir(one, faults), 'left-over.bucket'), 'old');
    execFileSync('install', ['-d', '-o', '0', '-g', '0', '-m', '0750', dir(two, faults)]);
    await e.kubectl(['label', 'node', one, 'kvpool.test/disk-missing=true']);
    // A tier member registers a 1 GiB buffer: its memory limit (the segment plus 1Gi) needs a segment
    // of some size, or the kernel kills it before it reaches the directory.
    const disk = (name: string, selector: string, path: string, segment = '64Mi') => `
apiVersion: ${v1}
kind: KVCacheBackend
metadata: {name: ${name}}
spec:
  connection:
    managed:
      leader: {}
      members:
        - {nodeSelector: {${selector}}, medium: DRAM, capacityPerMember: ${segment}, localDisks: [{path: ${path}, capacity: 1Gi}]}
---`;
    await apply(`${disk('disk-missing', 'kvpool.test/disk-missing: "true"', '/var/lib/kvcache-missing')}${disk('disk-faults', 'kvcache: "true"', faults, '512Mi')}
apiVersion: ${v1}
kind: KVCacheBackend
metadata: {name: bad-image}
spec:
  image: registry.invalid/kvpool/nothing:1
  connection:
    managed:
      leader: {}
      members: [{nodeSelector: {kvpool.test/none: "true"}, medium: DRAM, capacityPerMember: 64Mi}]
---
apiVersion: ${v1}
kind: KVCacheBackend
metadata: {name: nowhere}
spec:
  connection:
    managed:
      leader: {}
      members: [{nodeSelector: {kvpool.test/none: "true"}, medium: DRAM, capacityPerMember: 64Mi}]
---
apiVersion: ${v1}
kind: KVCachePool
metadata: {name: bad-pool}
spec: {backends: [bad-image], quota: {total: 1Gi}}
---
apiVersion: ${v1}
kind: KVCachePool
metadata: {name: empty-pool}
spec: {backends: [nowhere], quota: {total: 1Gi}}
---
apiVersion: ${v1}
kind: KVCachePoolBinding
metadata: {name: starved, namespace: team-b}
spec: {poolRef: {name: empty-pool}, quota: {ceiling: 512Mi}, domain: {name: starved, blockSize: 16, dtype: bfloat16}}
---
apiVersion: ${v1}
kind: ModelDeployment
metadata: {name: sglang-chat, namespace: team-b}
spec:
  model: {name: Qwen/Qwen2.5-7B-Instruct}
  engine: {name: SGLang, version: 0.5.18}
  kvCache: {poolRef: {name: team-b}}
  roles: [{name: server, replicas: 1, instanceType: ${localInstanceType}, resources: {accelerator: "1"}}]
`);
    // Two claims of one domain, as when two creates pass admission together (the walkthrough says they can).
    const raced = await claimOneDomainTwice();
    await e.kubectl(['-n', 'team-a', 'delete', 'kvcpb', 'team-a', '--wait=false']);

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
    for (const c of report.checks) assert.match(d.stdout, new RegExp(`^[✖!•] ${literally(c.title)}$`, 'm'));
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
  });

  /**
   * Two Bindings claiming one new domain, the state two creates racing past admission leave. The race
   * is made certain: the Binding rule is taken out of the validating configuration (as an administrator
   * could) while both are created, then put back, and a third claim is refused again.
   */
  async function claimOneDomainTwice(): Promise<[string, string]> {
    const config = 'kvpool-validation';
    const hook = 'kvcachepoolbindings.worker.gpustack.ai';
    const webhooks = JSON.parse(
      await e.kubectl(['get', 'validatingwebhookconfiguration', config, '-o', 'jsonpath={.webhooks}']),
    ) as { name: string }[];
    const at = webhooks.findIndex((w) => w.name === hook);
    assert.ok(at >= 0, `${config} has the ${hook} webhook`);
    const patch = (op: object) =>
      e.kubectl([
        'patch',
        'validatingwebhookconfiguration',
        config,
        '--type=json',
        '-p',
        JSON.stringify([op]),
      ]);
    const claim = (namespace: string, name: string) =>
      e.cluster.client.create({
        apiVersion: v1,
        kind: 'KVCachePoolBinding',
        metadata: { name, namespace },
        spec: {
          poolRef: { name: 'shared-dram' },
          quota: { ceiling: '1Gi' },
          domain: { name: 'raced', blockSize: 16, dtype: 'bfloat16' },
        },
      } as KubeObject);
    await patch({ op: 'test', path: `/webhooks/${at}/name`, value: hook });
    await patch({ op: 'remove', path: `/webhooks/${at}` });
    try {
      // The apiserver picks up a configuration change within moments: retry until the claim lands.
      await claim('team-a', 'race');
      await waitFor(
        () =>
          claim('team-b', 'race').then(
            () => true,
            () => undefined,
          ),
        { what: 'the second claim admitted while the rule is out', timeoutMs: 30_000 },
      );
    } finally {
      await patch({ op: 'add', path: `/webhooks/${at}`, value: webhooks[at] });
    }
    await waitFor(
      () =>
        claim('team-b', 'race-third').then(
          async () => {
            await e.kubectl(['-n', 'team-b', 'delete', 'kvcpb', 'race-third']);
            return undefined;
          },
          (err: Error) => (/domain "raced" is already claimed/.test(String(err.message)) ? true : undefined),
        ),
      { what: 'a third claim refused once the rule is back', timeoutMs: 30_000 },
    );
    return ['team-a/race', 'team-b/race'];
  }
});

const literally = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
