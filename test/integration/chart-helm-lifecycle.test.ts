// `helm install`, `helm upgrade` and `helm uninstall` of the chart with Helm 3 and Helm 4 against a real
// apiserver (no nodes: what runs in the Pods is the end-to-end suite's). Install takes over CRDs applied
// before and labels the namespace (baseline, for a new one); an upgrade keeps the CA bundle the operator
// set and the namespace's Pod Security level; uninstall leaves no webhook configuration or operator
// policy behind and keeps the CRDs, their objects and the namespace.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { helmBinary } from '../../local/toolchain.ts';
import { chartDir } from '../../scripts/manifests.ts';
import { settings as allSettings } from '../../src/api/setting.ts';
import { type KubeClient, type KubeObject, refOf } from '../../src/kube/client.ts';
import { mutatingConfigurationName, validatingConfigurationName } from '../../src/webhooks/configuration.ts';
import { type IsolatedCluster, startIsolatedCluster } from '../support/isolated-cluster.ts';

type Configuration = KubeObject & {
  webhooks: {
    clientConfig: { caBundle?: string; service?: { name: string; namespace: string } };
    timeoutSeconds: number;
  }[];
};
const configRef = (kind: string, name: string) => ({
  apiVersion: 'admissionregistration.k8s.io/v1',
  kind,
  name,
});
const validating = configRef('ValidatingWebhookConfiguration', validatingConfigurationName);
const operatorPolicy = configRef('ValidatingAdmissionPolicy', 'kvpool-operator');
const mutating = configRef('MutatingWebhookConfiguration', mutatingConfigurationName);

describe('the chart through helm install, upgrade and uninstall', () => {
  let cluster: IsolatedCluster;
  let client: KubeClient;
  const helmHome = mkdtempSync(join(tmpdir(), 'kvpool-helm-'));

  const helm = async (major: 3 | 4, args: string[]) => {
    const run = promisify(execFile);
    const env = {
      ...process.env,
      KUBECONFIG: cluster.cp.kubeconfigPath,
      HELM_CACHE_HOME: join(helmHome, 'cache'),
      HELM_CONFIG_HOME: join(helmHome, 'config'),
      HELM_DATA_HOME: join(helmHome, 'data'),
    };
    try {
      return (await run(helmBinary(major), args, { env })).stdout;
    } catch (err) {
      const e = err as { stderr?: string; message: string };
      throw new Error(e.stderr?.trim() || e.message);
    }
  };

  before(async () => {
    // The CRDs are already there (applied as deploy/crds would be): the chart takes them over.
    cluster = await startIsolatedCluster();
    client = cluster.client;
  });
  after(async () => {
    await cluster?.stop();
    rmSync(helmHome, { recursive: true, force: true });
  });

  for (const [major, ns] of [
    [3, 'kvpool-system'],
    [4, 'kvpool-other'],
  ] as const) {
    it(`installs, upgrades and uninstalls with Helm ${major} into ${ns}`, async () => {
      const pool = {
        apiVersion: 'worker.gpustack.ai/v1',
        kind: 'KVCachePool',
        metadata: { name: `kept-by-helm-${major}` },
        spec: { backends: ['b'], quota: { total: '1Gi' } },
      } as KubeObject;
      // Created while no webhook is registered: it must outlive the release.
      await client.apply(pool, { fieldManager: 'kvpool-test' });

      await client.apply({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } } as KubeObject, {
        fieldManager: 'kvpool-test',
      });
      await helm(major, ['install', 'kvpool', chartDir, '-n', ns, '--take-ownership']);
      const level = async () =>
        (await client.get({ apiVersion: 'v1', kind: 'Namespace', name: ns })).metadata.labels?.[
          'pod-security.kubernetes.io/enforce'
        ];
      assert.equal(await level(), 'baseline', 'a new release namespace');
      const settings = await client.list({ apiVersion: 'gpustack.ai/v1', kind: 'Setting', namespace: ns });
      assert.equal(settings.items.length, allSettings.length);
      assert.ok(await client.find(operatorPolicy), 'the policy bounding the operator account');
      for (const ref of [validating, mutating]) {
        const config = await client.get<Configuration>(ref);
        for (const w of config.webhooks) assert.deepEqual(w.clientConfig.service?.namespace, ns);
      }

      // The operator sets the CA bundle; an upgrade that changes the timeout keeps it.
      const caBundle = Buffer.from('a CA bundle the operator set').toString('base64');
      const config = await client.get<Configuration>(validating);
      await client.jsonPatch(
        validating,
        config.webhooks.map((_, i) => ({
          op: 'add',
          path: `/webhooks/${i}/clientConfig/caBundle`,
          value: caBundle,
        })),
      );
      // A release namespace labelled privileged (an installation from before, or a disk tier's) keeps
      // the level through an upgrade: lowering it would refuse the stores' next Pods.
      await client.mergePatch(
        { apiVersion: 'v1', kind: 'Namespace', name: ns },
        { metadata: { labels: { 'pod-security.kubernetes.io/enforce': 'privileged' } } },
      );
      await helm(major, ['upgrade', 'kvpool', chartDir, '-n', ns, '--set', 'webhook.timeoutSeconds=5']);
      const upgraded = await client.get<Configuration>(validating);
      for (const w of upgraded.webhooks) {
        assert.equal(w.clientConfig.caBundle, caBundle);
        assert.equal(w.timeoutSeconds, 5);
      }
      assert.equal(await level(), 'privileged', 'the level the namespace had, kept by the upgrade');

      // No node runs the pre-delete hook's Job here; the end-to-end suite runs it (chart-lifecycle).
      await helm(major, ['uninstall', 'kvpool', '-n', ns, '--no-hooks']);
      assert.equal(await client.find(validating), undefined, 'no validating webhook left behind');
      assert.equal(await client.find(mutating), undefined, 'no mutating webhook left behind');
      assert.equal(
        await client.find({
          apiVersion: 'rbac.authorization.k8s.io/v1',
          kind: 'ClusterRole',
          name: 'kvpool-operator',
        }),
        undefined,
      );
      assert.equal(await client.find(operatorPolicy), undefined, 'the policy goes with the operator');
      assert.ok(await client.find(refOf(pool)), 'the pool outlives the release (its CRD is kept)');
      assert.ok(
        await client.find({ apiVersion: 'v1', kind: 'Namespace', name: ns }),
        'the namespace is kept',
      );
      // A pool can be edited again: nothing refuses it for want of an operator.
      await client.apply({ ...pool, spec: { backends: ['b'], quota: { total: '2Gi' } } } as KubeObject, {
        fieldManager: 'kvpool-test',
      });
    });
  }
});
