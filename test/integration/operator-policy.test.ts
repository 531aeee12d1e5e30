// What the chart lets the operator's account write, on a real apiserver (a control plane of this file's
// own: the policy is cluster-wide). RBAC lets the account create Deployments and Services in any
// namespace and patch its webhook configurations; the chart's ValidatingAdmissionPolicy narrows that to
// what the operator does: children a kvpool object owns, never in kube-system, no privileged Pod, a
// hostPath only as a store's disk tier in the release namespace, and webhook configurations changed in
// their caBundle only. Requests are sent as the account itself, with its own token.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { installNamespace } from '../../scripts/manifests.ts';
import { KubeClient, type KubeObject } from '../../src/kube/client.ts';
import { ApiError } from '../../src/kube/errors.ts';
import { ensureNamespace } from '../support/cluster.ts';
import { type IsolatedCluster, startIsolatedCluster } from '../support/isolated-cluster.ts';
import {
  type AccountKubeconfig,
  accountKubeconfig,
  installOperatorAccess,
} from '../support/operator-access.ts';
import { waitFor } from '../support/wait.ts';

const deploymentOwner = {
  apiVersion: 'worker.gpustack.ai/v1',
  kind: 'ModelDeployment',
  name: 'chat',
  uid: '5b0c7e4e-8a51-4a55-9b8e-0d6f3c1c2a11',
  controller: true,
  blockOwnerDeletion: false,
};
const backendOwner = { ...deploymentOwner, kind: 'KVCacheBackend', name: 'mooncake-dram' };

interface PodSpecish {
  containers: Record<string, unknown>[];
  volumes?: Record<string, unknown>[];
}

function deployment(
  namespace: string,
  name: string,
  owners: object[],
  spec: Partial<PodSpecish> = {},
  kind: 'Deployment' | 'DaemonSet' = 'Deployment',
): KubeObject {
  const labels = { app: name };
  return {
    apiVersion: 'apps/v1',
    kind,
    metadata: { name, namespace, ...(owners.length ? { ownerReferences: owners } : {}) },
    spec: {
      selector: { matchLabels: labels },
      template: {
        metadata: { labels },
        spec: { containers: [{ name: 'engine', image: 'engine:1' }], ...spec },
      },
    },
  } as KubeObject;
}

const tierVolume = (path: string, name = 'local-disk') => ({
  name,
  hostPath: { path, type: 'Directory' },
});

describe('the chart bounds what the operator account may write', () => {
  let cluster: IsolatedCluster;
  let account: AccountKubeconfig;
  let operator: KubeClient;
  const refused = async (write: Promise<unknown>, pattern: RegExp) => {
    const err = await write.then(
      () => undefined,
      (e: unknown) => e,
    );
    assert.ok(err instanceof ApiError, `expected the operator account to be refused (${pattern})`);
    assert.match(err.message, pattern);
  };

  before(async () => {
    cluster = await startIsolatedCluster();
    for (const ns of ['team-a', installNamespace]) await ensureNamespace(cluster.client, ns);
    await installOperatorAccess(cluster.client);
    // A disk tier needs hostPath, which Pod Security's baseline forbids: its admin raises the level.
    await cluster.client.mergePatch(
      { apiVersion: 'v1', kind: 'Namespace', name: installNamespace },
      { metadata: { labels: { 'pod-security.kubernetes.io/enforce': 'privileged' } } },
    );
    account = await accountKubeconfig(cluster.client, cluster.cp.kubeconfigPath);
    operator = await KubeClient.fromKubeconfigFile(account.path);
    // The policy is loaded by the apiserver's own watch: wait until it judges the account's requests.
    await waitFor(
      () =>
        operator.create(deployment('team-a', 'probe', []), { dryRun: true }).then(
          () => undefined,
          (err: unknown) => (String(err).includes('ValidatingAdmissionPolicy') ? true : undefined),
        ),
      { what: 'the operator policy to refuse an unowned Deployment', timeoutMs: 30_000 },
    );
  });
  after(async () => {
    await operator?.close();
    account?.remove();
    await cluster?.stop();
  });

  it('admits what the operator does: an owned Deployment in a user namespace, a store member with its disk tier', async () => {
    await operator.create(deployment('team-a', 'chat-server', [deploymentOwner]), { dryRun: true });
    await operator.create(
      deployment(
        installNamespace,
        'mooncake-dram-member-0',
        [backendOwner],
        { volumes: [tierVolume('/var/lib/kvcache')] },
        'DaemonSet',
      ),
      { dryRun: true },
    );
    // The disk tier's cleanup Pod, the operator's election Lease and its webhook certificate Secret.
    await operator.create(
      {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: {
          name: 'mooncake-dram-tier-cleanup',
          namespace: installNamespace,
          ownerReferences: [backendOwner],
        },
        spec: {
          restartPolicy: 'Never',
          containers: [
            {
              name: 'empty-tier',
              image: 'store:1',
              command: ['sh', '-c', 'find /var/lib/kvcache -mindepth 1 -delete'],
            },
          ],
          volumes: [tierVolume('/var/lib/kvcache')],
        },
      } as KubeObject,
      { dryRun: true },
    );
    await operator.create(
      {
        apiVersion: 'coordination.k8s.io/v1',
        kind: 'Lease',
        metadata: { name: 'kvpool-operator', namespace: installNamespace },
        spec: { holderIdentity: 'kvpool-operator-0' },
      } as KubeObject,
      { dryRun: true },
    );
    const secret = await operator.get({
      apiVersion: 'v1',
      kind: 'Secret',
      namespace: installNamespace,
      name: 'kvpool-webhook-certs',
    });
    await operator.replace({ ...secret, data: { 'ca.crt': Buffer.from('ca').toString('base64') } });
    // Anyone else is not bound by it.
    await cluster.client.create(deployment('team-a', 'users-own', []), { dryRun: true });
  });

  it('refuses an unowned Deployment, and one in kube-system even when owned', async () => {
    await refused(
      operator.create(deployment('team-a', 'unowned', []), { dryRun: true }),
      /ValidatingAdmissionPolicy 'kvpool-operator'.*deployments team-a\/unowned: the kvpool operator writes only objects a kvpool object owns/,
    );
    await refused(
      operator.create(deployment('kube-system', 'owned', [deploymentOwner]), { dryRun: true }),
      /the kvpool operator never writes in kube-system/,
    );
    // A KVCacheBackend owns children in the release namespace only.
    await refused(
      operator.create(deployment('team-a', 'backend-owned', [backendOwner]), { dryRun: true }),
      /writes only objects a kvpool object owns/,
    );
  });

  it('refuses a privileged Pod template and a hostPath outside a store’s disk tier', async () => {
    await refused(
      operator.create(
        deployment('team-a', 'privileged', [deploymentOwner], {
          containers: [{ name: 'engine', image: 'engine:1', securityContext: { privileged: true } }],
        }),
        { dryRun: true },
      ),
      /no privileged container/,
    );
    await refused(
      operator.create(
        deployment('team-a', 'host', [deploymentOwner], { volumes: [tierVolume('/var/lib/kvcache')] }),
        {
          dryRun: true,
        },
      ),
      /hostPath/,
    );
    for (const path of ['/', '/var/lib/kubelet', '/etc/kubernetes', '/var/lib/../lib/kubelet']) {
      await refused(
        operator.create(
          deployment(
            installNamespace,
            'member',
            [backendOwner],
            { volumes: [tierVolume(path)] },
            'DaemonSet',
          ),
          { dryRun: true },
        ),
        /hostPath/,
      );
    }
    await refused(
      operator.create(
        deployment(
          installNamespace,
          'member',
          [backendOwner],
          { volumes: [tierVolume('/srv/x', 'host-path-0')] },
          'DaemonSet',
        ),
        { dryRun: true },
      ),
      /hostPath/,
    );
  });

  it('refuses taking over an object it does not own, and deleting one; deletes a member Pod to roll it', async () => {
    await cluster.client.create(deployment('team-a', 'theirs', []));
    const ref = { apiVersion: 'apps/v1', kind: 'Deployment', namespace: 'team-a', name: 'theirs' };
    await refused(
      operator.mergePatch(ref, { metadata: { ownerReferences: [deploymentOwner] } }),
      /writes only objects a kvpool object owns/,
    );
    await refused(operator.delete(ref), /writes only objects a kvpool object owns/);
    await cluster.client.create(deployment('team-a', 'ours', [deploymentOwner]));
    assert.equal(
      await operator.delete({ ...ref, name: 'ours' }),
      true,
      'an owned Deployment is deleted as a ModelDeployment prunes a role',
    );
    // A member Pod is owned by its DaemonSet, not by the backend: the operator deletes it to roll the group.
    const member = (name: string, owner: object) =>
      ({
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name, namespace: installNamespace, ownerReferences: [owner] },
        spec: { containers: [{ name: 'member', image: 'store:1' }] },
      }) as KubeObject;
    const daemonSet = {
      ...deploymentOwner,
      apiVersion: 'apps/v1',
      kind: 'DaemonSet',
      name: 'mooncake-dram-member-0',
    };
    await cluster.client.create(member('mooncake-dram-member-0-abcde', daemonSet));
    const pod = { apiVersion: 'v1', kind: 'Pod', namespace: installNamespace };
    assert.equal(
      await operator.delete({ ...pod, name: 'mooncake-dram-member-0-abcde' }),
      true,
      'a member rolled',
    );
    await cluster.client.create(
      member('someone-elses', { ...deploymentOwner, apiVersion: 'apps/v1', kind: 'ReplicaSet' }),
    );
    await refused(
      operator.delete({ ...pod, name: 'someone-elses' }),
      /writes only objects a kvpool object owns/,
    );
  });

  it('deletes a Binding’s domain claim, never an election Lease', async () => {
    const lease = (name: string, labels: Record<string, string>) =>
      cluster.client.create({
        apiVersion: 'coordination.k8s.io/v1',
        kind: 'Lease',
        metadata: { name, namespace: installNamespace, labels },
        spec: { holderIdentity: 'someone' },
      } as KubeObject);
    const ref = { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', namespace: installNamespace };
    await lease('kvpool-domain-0123', { 'app.kubernetes.io/component': 'kvcache-domain-claim' });
    assert.equal(await operator.delete({ ...ref, name: 'kvpool-domain-0123' }), true, 'a claim deleted');
    await lease('mooncake-dram-leader', {});
    await refused(
      operator.delete({ ...ref, name: 'mooncake-dram-leader' }),
      /deletes only the domain claims of Bindings/,
    );
  });

  it('lets its webhook configuration change in the caBundle only', async () => {
    await cluster.client.create({
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingWebhookConfiguration',
      metadata: { name: 'kvpool-validation' },
      webhooks: [
        {
          name: 'kvcachebackends.worker.gpustack.ai',
          clientConfig: {
            service: { namespace: installNamespace, name: 'kvpool-webhook', path: '/v', port: 443 },
          },
          rules: [
            {
              apiGroups: ['worker.gpustack.ai'],
              apiVersions: ['v1'],
              operations: ['CREATE'],
              resources: ['kvcachebackends'],
            },
          ],
          failurePolicy: 'Fail',
          sideEffects: 'None',
          admissionReviewVersions: ['v1'],
        },
      ],
    } as KubeObject);
    const ref = {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingWebhookConfiguration',
      name: 'kvpool-validation',
    };
    const ca = Buffer.from('-----BEGIN CERTIFICATE-----\n').toString('base64');
    await operator.jsonPatch(ref, [{ op: 'add', path: '/webhooks/0/clientConfig/caBundle', value: ca }]);
    const beyond = /its webhook configurations only in their caBundle/;
    await refused(
      operator.jsonPatch(ref, [{ op: 'replace', path: '/webhooks/0/failurePolicy', value: 'Ignore' }]),
      beyond,
    );
    await refused(
      operator.jsonPatch(ref, [
        { op: 'add', path: '/webhooks/0/clientConfig/service/namespace', value: 'elsewhere' },
      ]),
      beyond,
    );
    await refused(operator.jsonPatch(ref, [{ op: 'remove', path: '/webhooks/0' }]), beyond);
  });
});
