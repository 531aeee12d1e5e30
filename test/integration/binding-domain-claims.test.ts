// A Binding's domain is claimed with a Lease the apiserver creates only if absent (decision 40): two
// creates of one domain at the same instant admit exactly one, every time; a deleted Binding frees its
// domain; a restarted operator judges the same; a claim whose create another admission step refused
// lapses after the grace; uninstall leaves no claim behind.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ApiError } from '../../src/kube/errors.ts';
import type { KubeObject } from '../../src/kube/object.ts';
import { runUninstall } from '../../src/kvpool/uninstall.ts';
import { claimName, claimSelector, type DomainClaim } from '../../src/vocabulary/domain-claims.ts';
import { binding, externalBackend, pool, v1 } from '../builders/index.ts';
import { ensureNamespace } from '../support/cluster.ts';
import { type IsolatedCluster, startIsolatedCluster } from '../support/isolated-cluster.ts';
import { MooncakeStore } from '../support/mooncake-store.ts';
import { type InProcessOperator, startOperatorInProcess } from '../support/operator.ts';
import { refusalOf } from '../support/refusal.ts';
import { waitFor } from '../support/wait.ts';

const MiB = 1 << 20;
const ns = 'gpustack-system';
const graceMs = 3_000;

describe('Binding domain claims', () => {
  let cluster: IsolatedCluster;
  let store: MooncakeStore;
  let operator: InProcessOperator | undefined;

  const start = async () => {
    operator = await startOperatorInProcess(cluster.cp.kubeconfigPath, {
      webhooks: true,
      domainClaimGraceMs: graceMs,
    });
  };
  const claimOf = (domain: string) =>
    cluster.client.find<DomainClaim>({
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      namespace: ns,
      name: claimName('ledger', domain),
    });
  const refusal = async (p: Promise<unknown>) => (await refusalOf(p)).message;
  const create = (namespace: string, name: string, domain: string) =>
    cluster.client.create(binding(namespace, name, { pool: 'pool-l', ceiling: '1Mi', domain: domain }));

  before(async () => {
    [cluster, store] = await Promise.all([
      startIsolatedCluster(),
      MooncakeStore.start({ members: 1, memberBytes: 64 * MiB, tenants: [] }),
    ]);
    for (const n of [ns, 'ns1', 'ns2', 'quota-zero']) await ensureNamespace(cluster.client, n);
    await start();
    await cluster.client.create(externalBackend('ledger', store));
    await cluster.client.create(pool('pool-l', { backend: 'ledger', total: '64Mi' }));
  });
  after(async () => {
    await operator?.stop();
    await store?.stop();
    await cluster?.stop();
  });

  it('admits exactly one of two creates of one domain at the same instant, 50 times out of 50', async () => {
    const admittedFrom: string[] = [];
    for (let i = 0; i < 50; i++) {
      const domain = `race-${i}`;
      const results = await Promise.allSettled([
        create('ns1', `race-${i}`, domain),
        create('ns2', `race-${i}`, domain),
      ]);
      const admitted = results.filter((r) => r.status === 'fulfilled');
      assert.equal(admitted.length, 1, `round ${i}: ${results.map((r) => r.status).join(', ')}`);
      const refused = results.find((r) => r.status === 'rejected')!.reason as unknown;
      assert.ok(refused instanceof ApiError, String(refused));
      assert.match(refused.message, new RegExp(`spec.domain.name: domain "${domain}" is already claimed`));
      const winner = results[0]!.status === 'fulfilled' ? 'ns1' : 'ns2';
      admittedFrom.push(winner);
      const stored = (await cluster.client.get({
        apiVersion: v1,
        kind: 'KVCachePoolBinding',
        namespace: winner,
        name: `race-${i}`,
      })) as KubeObject;
      assert.equal((await claimOf(domain))?.spec?.holderIdentity, stored.metadata.uid);
    }
    console.log(
      `race winners: ns1 ${admittedFrom.filter((w) => w === 'ns1').length}, ns2 ${admittedFrom.filter((w) => w === 'ns2').length}`,
    );
  });

  it('frees a deleted Binding’s domain: its claim goes with it, and another namespace takes the domain at once', async () => {
    const freed = (await create('ns1', 'freed', 'freed')) as KubeObject;
    const ref = { apiVersion: v1, kind: 'KVCachePoolBinding', namespace: 'ns1', name: 'freed' };
    assert.match(await refusal(create('ns2', 'freed', 'freed')), /domain "freed" is already claimed/);
    await cluster.client.delete(ref);
    await waitFor(async () => ((await cluster.client.find(ref)) ? undefined : true), {
      what: 'the deleted Binding ns1/freed to be released and gone',
    });
    // Deleted, not lapsed: a lapsed claim stays until a claimant takes it over.
    await waitFor(async () => ((await claimOf('freed')) ? undefined : true), {
      what: `the claim of the deleted Binding ns1/freed (uid ${freed.metadata.uid}) to be deleted`,
      timeoutMs: 30_000,
    });
    const taken = (await create('ns2', 'freed', 'freed')) as KubeObject;
    assert.equal((await claimOf('freed'))?.spec?.holderIdentity, taken.metadata.uid);
  });

  it('judges the same after an operator restart', async () => {
    await create('ns1', 'before-restart', 'kept');
    await operator!.stop();
    operator = undefined;
    await start();
    assert.match(
      await refusal(create('ns2', 'after-restart', 'kept')),
      /domain "kept" is already claimed on this store \(backend ledger\) by another namespace/,
    );
    await create('ns2', 'after-restart', 'new-after-restart');
  });

  it('lets a claim whose create another admission step refused lapse after the grace, not before', async () => {
    // ResourceQuota admits after the webhooks: the claim is made, the Binding never stored. No quota
    // controller runs here, so the test writes the status it would (admission judges status.hard).
    const hard = { 'count/kvcachepoolbindings.worker.gpustack.ai': '0' };
    const quota = await cluster.client.create({
      apiVersion: 'v1',
      kind: 'ResourceQuota',
      metadata: { name: 'no-bindings', namespace: 'quota-zero' },
      spec: { hard },
    } as KubeObject);
    await cluster.client.replace({ ...quota, status: { hard, used: hard } } as KubeObject, 'status');
    const quotaRefusal = await refusal(create('quota-zero', 'refused', 'orphaned'));
    assert.match(quotaRefusal, /quota/i);
    const orphan = await claimOf('orphaned');
    assert.ok(orphan, 'the refused create left its claim');
    assert.match(
      await refusal(create('ns1', 'orphan-taker', 'orphaned')),
      /domain "orphaned" is already claimed .*not yet stored.*lapses 3 s after it was made/,
    );
    await new Promise((r) => setTimeout(r, graceMs));
    const taker = (await create('ns1', 'orphan-taker', 'orphaned')) as KubeObject;
    const taken = await claimOf('orphaned');
    assert.equal(taken?.spec?.holderIdentity, taker.metadata.uid);
    assert.equal(taken?.metadata.uid, orphan.metadata.uid, 'taken over in place, not deleted and recreated');
    assert.notEqual(taken?.metadata.resourceVersion, orphan.metadata.resourceVersion);
  });

  it('leaves no claim behind after uninstall', async () => {
    const claims = () =>
      cluster.client.list(
        { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', namespace: ns },
        {
          labelSelector: claimSelector,
        },
      );
    assert.ok((await claims()).items.length >= 53, 'the Bindings above hold claims');
    await operator!.stop();
    operator = undefined;
    const code = await runUninstall([
      `--kubeconfig=${cluster.cp.kubeconfigPath}`,
      `--namespace=${ns}`,
      '--deployment=kvpool-operator',
    ]);
    assert.equal(code, 0);
    assert.deepEqual(
      (await claims()).items.map((c) => c.metadata.name),
      [],
    );
  });
});
