// The chart against the real apiserver: what it renders is accepted (--dry-run=server), the operator's
// Pod passes the `restricted` Pod Security level, a Step 1 store passes the release namespace's default
// level (`baseline`), and the operator's account can do exactly what the
// committed expectation lists (kubectl auth can-i --list), which reaches no Secret but its own; a store
// leader's account likewise reaches its own Lease and seed ConfigMap only.
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { parseAllDocuments } from 'yaml';
import { helmTemplate, installFilePaths, installNamespace } from '../../scripts/manifests.ts';
import { KubeClient, type KubeObject } from '../../src/kube/client.ts';
import { ApiError } from '../../src/kube/errors.ts';
import { ensureNamespace, kubectl, testClient, testKubeconfig, uniqueName } from '../support/cluster.ts';
import {
  type AccountKubeconfig,
  accountKubeconfig,
  chartObjects,
  installOperatorAccess,
  operatorAccount,
} from '../support/operator-access.ts';

const account = `system:serviceaccount:${installNamespace}:${operatorAccount}`;
const expected = (name: string) => new URL(`expected/${name}`, import.meta.url);

/** Compares with the committed expectation; UPDATE_GOLDEN=1 records it. */
function assertExpected(name: string, actual: string): void {
  if (process.env.UPDATE_GOLDEN === '1') {
    writeFileSync(expected(name), actual);
    return;
  }
  assert.equal(
    actual,
    readFileSync(expected(name), 'utf8'),
    `${name}: rerun with UPDATE_GOLDEN=1 if intended`,
  );
}

describe('the chart on the real apiserver', () => {
  let admin: KubeClient;
  let operatorKubeconfig: AccountKubeconfig;
  let operator: KubeClient;
  const otherNamespace = 'kvpool-rbac-elsewhere';

  before(async () => {
    admin = await testClient();
    await ensureNamespace(admin, otherNamespace);
    await installOperatorAccess(admin);
    operatorKubeconfig = await accountKubeconfig(admin, testKubeconfig());
    operator = await KubeClient.fromKubeconfigFile(operatorKubeconfig.path);
  });
  after(async () => {
    await operator?.close();
    operatorKubeconfig?.remove();
    await admin.close();
  });

  it('accepts everything the chart renders, and the non-Helm install files (--dry-run=server)', async () => {
    const chart = helmTemplate(['--namespace', installNamespace, '--include-crds']);
    const files = installFilePaths.map((path) => readFileSync(path, 'utf8')).join('');
    for (const manifest of [chart, files]) {
      const out = await kubectl(
        ['apply', '--server-side', '--dry-run=server', '--field-manager=kvpool-test', '-f', '-'],
        manifest,
      );
      const applied = out.split('\n').filter((l) => l.includes('serverside-applied (server dry run)'));
      const objects = parseAllDocuments(manifest).filter((d) => d.toJSON()?.kind).length;
      assert.equal(applied.length, objects, out);
    }
  });

  it('runs the operator in a Pod the `restricted` Pod Security level admits', async () => {
    const ns = uniqueName('restricted');
    await admin.apply(
      {
        apiVersion: 'v1',
        kind: 'Namespace',
        metadata: { name: ns, labels: { 'pod-security.kubernetes.io/enforce': 'restricted' } },
      } as KubeObject,
      { fieldManager: 'kvpool-test' },
    );
    const deployment = chartObjects().find((o) => o.kind === 'Deployment') as KubeObject & {
      spec: { template: { metadata: KubeObject['metadata']; spec: unknown } };
    };
    const pod = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'kvpool-operator', namespace: ns, labels: deployment.spec.template.metadata.labels },
      spec: deployment.spec.template.spec,
    } as KubeObject;
    const created = await admin.create(pod, { dryRun: true });
    assert.equal(created.metadata.namespace, ns);
    // The control: a Pod without the securityContext is refused by the same namespace.
    const bare = { ...pod, spec: { containers: [{ name: 'c', image: 'kvpool/kvpool-operator:0.1.0' }] } };
    await assert.rejects(
      admin.create(bare as KubeObject, { dryRun: true }),
      /violates PodSecurity "restricted/,
    );
  });

  it('runs a DRAM store over TCP (Step 1) under the release namespace’s default level, baseline, and refuses a disk tier there', async () => {
    const release = chartObjects().find((o) => o.kind === 'Namespace')!;
    const level = release.metadata.labels?.['pod-security.kubernetes.io/enforce'];
    assert.equal(level, 'baseline', 'the release namespace’s default Pod Security level');
    const ns = uniqueName('store-pod-security');
    await admin.apply(
      {
        apiVersion: 'v1',
        kind: 'Namespace',
        metadata: { name: ns, labels: { 'pod-security.kubernetes.io/enforce': level } },
      } as KubeObject,
      { fieldManager: 'kvpool-test' },
    );
    type Workload = KubeObject & { spec: { template: { metadata: KubeObject['metadata']; spec: unknown } } };
    const rendered = (name: string) =>
      JSON.parse(readFileSync(new URL(`../unit/golden/backend/${name}.json`, import.meta.url), 'utf8')) as {
        leaderDeployment: Workload;
        memberDaemonSets: Workload[];
      };
    const podOf = (w: Workload) =>
      ({
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: w.metadata.name, namespace: ns, labels: w.spec.template.metadata.labels },
        spec: w.spec.template.spec,
      }) as KubeObject;
    const step1 = rendered('step-1-dram');
    for (const w of [step1.leaderDeployment, ...step1.memberDaemonSets])
      await admin.create(podOf(w), { dryRun: true });
    const [tier] = rendered('step-5-disk-tier').memberDaemonSets;
    await assert.rejects(
      admin.create(podOf(tier!), { dryRun: true }),
      /violates PodSecurity "baseline:latest": hostPath volumes/,
    );
  });

  it('lets the operator account do exactly what the expectation lists, in its namespace and elsewhere', async () => {
    for (const [ns, file] of [
      [installNamespace, 'operator-can-i-own-namespace.txt'],
      [otherNamespace, 'operator-can-i-other-namespace.txt'],
    ] as const) {
      assertExpected(file, await kubectl(['auth', 'can-i', '--list', `--as=${account}`, '-n', ns]));
    }
  });

  it('lets a store leader’s account do exactly what its expectation lists: its own Lease and seed ConfigMap', async () => {
    // The Step 1 backend's account as the operator renders it (the golden file of the render), in a
    // namespace of its own; members run without a token, so the leader's is the store's only account.
    const ns = uniqueName('store-rbac');
    await ensureNamespace(admin, ns);
    const { rbac } = JSON.parse(
      readFileSync(new URL('../unit/golden/backend/step-1-dram.json', import.meta.url), 'utf8'),
    ) as { rbac: (KubeObject & { subjects?: { namespace?: string }[] })[] };
    for (const obj of rbac) {
      const moved = {
        ...obj,
        metadata: { ...obj.metadata, namespace: ns, ownerReferences: undefined },
        ...(obj.subjects ? { subjects: obj.subjects.map((x) => ({ ...x, namespace: ns })) } : {}),
      };
      await admin.apply(moved as KubeObject, { fieldManager: 'kvpool-test' });
    }
    const leader = rbac.find((o) => o.kind === 'ServiceAccount')!.metadata.name;
    assertExpected(
      'store-leader-can-i.txt',
      await kubectl(['auth', 'can-i', '--list', `--as=system:serviceaccount:${ns}:${leader}`, '-n', ns]),
    );
    for (const other of [otherNamespace, installNamespace]) {
      const out = await kubectl([
        'auth',
        'can-i',
        '--list',
        `--as=system:serviceaccount:${ns}:${leader}`,
        '-n',
        other,
      ]);
      assert.doesNotMatch(out, /leases|configmaps/, `nothing of the store's in ${other}`);
    }
  });

  it('refuses the operator account every Secret but its webhook certificate', async () => {
    const secret = async (namespace: string, name: string) => {
      await admin.apply(
        {
          apiVersion: 'v1',
          kind: 'Secret',
          metadata: { name, namespace },
          stringData: { k: 'v' },
        } as KubeObject,
        { fieldManager: 'kvpool-test' },
      );
      return { apiVersion: 'v1', kind: 'Secret', namespace, name };
    };
    const refused = async (p: Promise<unknown>, what: string) =>
      assert.rejects(p, (err: unknown) => err instanceof ApiError && err.status === 403, what);
    await refused(operator.get(await secret(otherNamespace, 'elsewhere')), 'a Secret in another namespace');
    await refused(
      operator.get(await secret(installNamespace, 'neighbour')),
      'another Secret in its namespace',
    );
    await refused(
      operator.list({ apiVersion: 'v1', kind: 'Secret', namespace: installNamespace }),
      'listing',
    );
    await refused(
      operator.create({
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name: uniqueName('minted'), namespace: installNamespace },
      } as KubeObject),
      'creating a Secret',
    );
    const own = await operator.get({
      apiVersion: 'v1',
      kind: 'Secret',
      namespace: installNamespace,
      name: 'kvpool-webhook-certs',
    });
    assert.equal(own.metadata.name, 'kvpool-webhook-certs');
  });
});
