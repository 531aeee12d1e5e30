// The walkthrough's workloads on the local cluster, with the engine stand-in as the engine: Step 3's
// two replicas share prefix blocks through the real store under the Binding's domain, and Step 6's fp8
// deployment writes into its own domain.

import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { localInstanceType } from '../../local/cluster.ts';
import type { KVCachePoolBinding, ModelDeployment } from '../../src/api/types.ts';
import type { KubeObject } from '../../src/kube/object.ts';
import { parsePrometheusText } from '../../src/store/prometheus.ts';
import { expectDeletionHeld } from '../support/held-deletion.ts';
import { conditionOf, type E2ECluster, startE2ECluster } from '../support/local-cluster.ts';
import { readyReplicas } from '../support/pods.ts';
import { seedText } from '../support/seed.ts';
import { waitFor } from '../support/wait.ts';

type Pod = KubeObject & { status?: { podIP?: string; conditions?: { type: string; status: string }[] } };
const v1 = 'worker.gpustack.ai/v1';
const words = (n: number, from = 0) => Array.from({ length: n }, (_, i) => `w${from + i}`).join(' ');

describe('the walkthrough workloads on the local cluster', () => {
  let e: E2ECluster;
  const replicas = (md: string) => readyReplicas<Pod>(e.cluster.client, md);
  const complete = async (ip: string, prompt: string) =>
    (await (
      await fetch(`http://${ip}:8000/v1/completions`, {
        method: 'POST',
        body: JSON.stringify({ prompt, max_tokens: 4 }),
      })
    ).json()) as {
      blocks: number;
      hits: number;
      misses: number;
    };
  const binding = (name: string) =>
    e.cluster.client.get<KVCachePoolBinding>({
      apiVersion: v1,
      kind: 'KVCachePoolBinding',
      namespace: 'team-a',
      name,
    });
  const tenantCharged = async (tenant: string) => {
    const b = await e.backend('mooncake-dram');
    const admin = conditionOf(b, 'LeaderAvailable')!.message.match(/at (\S+:\d+)/)![1]!;
    const families = parsePrometheusText(await (await fetch(`http://${admin}/metrics`)).text());
    return (
      families.get('mooncake_tenant_quota_charged_bytes')?.find((s) => s.labels.tenant_id === tenant)
        ?.value ?? 0
    );
  };

  before(async () => {
    e = await startE2ECluster();
    await e.kubectl(['create', 'namespace', 'team-a']);
    await e.kubectl(['create', 'namespace', 'team-b']);
    for (const step of ['step-1-store.yaml', 'step-2-pool-binding.yaml'])
      await e.kubectl(['apply', '--server-side', '-f', '-'], seedText(step));
    await waitFor(async () => ((await binding('team-a')).status?.phase === 'Ready' ? true : undefined), {
      what: 'the Binding Ready',
    });
  });
  after(() => e?.stop());

  it('Step 3: two replicas; the second reads the blocks the first wrote; usage grows; CacheAttached', async () => {
    await e.kubectl(
      ['apply', '--server-side', '-f', '-'],
      seedText('step-3-workload.yaml', localInstanceType),
    );
    const pods = await waitFor(
      async () => {
        const r = await replicas('qwen-chat');
        return r.length === 2 ? r : undefined;
      },
      { what: 'two ready replicas', timeoutMs: 120_000 },
    );
    const prompt = words(200);
    const first = await complete(pods[0]!.status!.podIP!, prompt);
    const second = await complete(pods[1]!.status!.podIP!, prompt);
    assert.equal(first.blocks, 3, 'block size 64 cuts 200 tokens into 3 full blocks');
    assert.deepEqual(
      [first.misses, second.hits, second.misses],
      [3, 3, 0],
      'the second replica reads every block the first wrote',
    );
    const shared = await complete(pods[1]!.status!.podIP!, `${words(128)} ${words(72, 1000)}`);
    assert.deepEqual(
      [shared.hits, shared.misses],
      [2, 1],
      'a prompt sharing a prefix reads only the shared blocks',
    );
    const b = await waitFor(
      async () => {
        const x = await binding('team-a');
        return x.status?.usage && x.status.usage !== '0' ? x : undefined;
      },
      { what: 'the Binding’s usage to grow' },
    );
    console.log(`team-a usage after two prompts: ${b.status?.usage}`);
    const md = await waitFor(
      async () => {
        const m = await e.cluster.client.get<ModelDeployment>({
          apiVersion: v1,
          kind: 'ModelDeployment',
          namespace: 'team-a',
          name: 'qwen-chat',
        });
        return conditionOf(m, 'CacheAttached')?.status === 'True' ? m : undefined;
      },
      { what: 'CacheAttached=True' },
    );
    assert.equal(conditionOf(md, 'CacheAttached')?.reason, 'CacheActive');
    assert.equal(md.status?.roleSummary, '2S');
  });

  it('holds the Binding’s deletion while the deployment exists', () =>
    expectDeletionHeld(e, async () => (await replicas('qwen-chat')).map((p) => p.metadata.uid!).sort()));

  it('Step 6: fp8 renders --kv-cache-dtype fp8_e4m3 and --block-size 16; its blocks land in qwen-fp8-v1, not default', async () => {
    await e.kubectl(
      ['apply', '--server-side', '-f', '-'],
      seedText('step-6-second-team.yaml', localInstanceType),
    );
    const pods = await waitFor(
      async () => {
        const r = await replicas('qwen-chat-fp8');
        return r.length === 1 ? r : undefined;
      },
      { what: 'the fp8 replica ready', timeoutMs: 120_000 },
    );
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
    const defaultBefore = await tenantCharged('default');
    const r = await complete(pods[0]!.status!.podIP!, words(64, 5000));
    assert.deepEqual([r.blocks, r.misses], [4, 4]);
    const fp8 = await waitFor(
      async () => {
        const v = await tenantCharged('qwen-fp8-v1');
        return v > 0 ? v : undefined;
      },
      { what: 'qwen-fp8-v1 charged' },
    );
    assert.equal(await tenantCharged('default'), defaultBefore, 'nothing landed in the default domain');
    console.log(`qwen-fp8-v1 holds ${fp8} bytes after one 64-token prompt`);
    const oversubscribed = await waitFor(
      async () => {
        const out = await e.kubectl([
          'get',
          'kvcp',
          'shared-dram',
          '-o',
          'jsonpath={.status.conditions[?(@.type=="QuotaWithinTotal")].reason} {.status.phase}',
        ]);
        return out === 'Oversubscribed Ready' ? out : undefined;
      },
      { what: 'the pool Oversubscribed (8Gi + 8Gi + 4Gi over 16Gi)' },
    );
    assert.ok(oversubscribed);
  });
});
