// The API client authenticates with a ServiceAccount token kept in a file, as the operator does in a
// Pod with the projected token: when the kubelet replaces the token and the old one stops working, the
// client reads the file again instead of failing with the token it started with.

import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { KubeConfig } from '@kubernetes/client-node';
import { parse, stringify } from 'yaml';
import { KubeClient, type KubeObject } from '../../src/kube/client.ts';
import { ApiError } from '../../src/kube/errors.ts';
import { ensureNamespace, testClient, testKubeconfig } from '../support/cluster.ts';
import { type AccountKubeconfig, accountKubeconfig } from '../support/operator-access.ts';
import { waitFor } from '../support/wait.ts';

const ns = 'token-file';
const account = 'reader';

describe('a ServiceAccount token read from a file', () => {
  let admin: KubeClient;
  let kubeconfig: AccountKubeconfig;
  const secret = async (name: string) => {
    const s = await admin.apply<KubeObject>(
      { apiVersion: 'v1', kind: 'Secret', metadata: { name, namespace: ns } } as KubeObject,
      { fieldManager: 'kvpool-test' },
    );
    return { name, uid: s.metadata.uid! };
  };
  const probe = { apiVersion: 'v1', kind: 'ConfigMap', namespace: ns, name: 'probe' };

  before(async () => {
    admin = await testClient();
    await ensureNamespace(admin, ns);
    const meta = { name: account, namespace: ns };
    const objects = [
      { apiVersion: 'v1', kind: 'ServiceAccount', metadata: meta },
      {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'Role',
        metadata: meta,
        rules: [{ apiGroups: [''], resources: ['configmaps'], resourceNames: ['probe'], verbs: ['get'] }],
      },
      {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'RoleBinding',
        metadata: meta,
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: account },
        subjects: [{ kind: 'ServiceAccount', name: account, namespace: ns }],
      },
      { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'probe', namespace: ns } },
    ] as KubeObject[];
    for (const o of objects) await admin.apply(o, { fieldManager: 'kvpool-test' });
    kubeconfig = await accountKubeconfig(admin, testKubeconfig(), ns, account);
  });
  after(async () => {
    kubeconfig.remove();
    await admin.close();
  });

  /** Waits until the API server refuses `token` (its bound Secret deleted): the control that revocation bites. */
  const awaitRefused = async (token: string) => {
    const path = join(kubeconfig.tokenFile, '..', 'captured-kubeconfig');
    const captured = stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'c', cluster: { server: admin.server, 'insecure-skip-tls-verify': true } }],
      users: [{ name: 'u', user: { token } }],
      contexts: [{ name: 'c', context: { cluster: 'c', user: 'u' } }],
      'current-context': 'c',
    });
    writeFileSync(path, captured, { mode: 0o600 });
    const client = await KubeClient.fromKubeconfigFile(path);
    try {
      await waitFor(
        () =>
          client.get(probe).then(
            () => undefined,
            (err: unknown) => (err instanceof ApiError && err.status === 401 ? true : undefined),
          ),
        { what: 'the old token to be refused' },
      );
    } finally {
      await client.close();
    }
  };

  it('keeps working after the token is replaced and the old one revoked', async () => {
    const first = await secret('token-binding-1');
    const oldToken = await kubeconfig.rotate(first);
    const client = await KubeClient.fromKubeconfigFile(kubeconfig.path);
    try {
      assert.equal((await client.get(probe)).metadata.name, 'probe');
      // The kubelet writes a new token; the old one is revoked (its bound Secret is deleted).
      await kubeconfig.rotate(await secret('token-binding-2'));
      await admin.delete({ apiVersion: 'v1', kind: 'Secret', namespace: ns, name: first.name });
      await awaitRefused(oldToken);
      assert.equal((await client.get(probe)).metadata.name, 'probe', 'the client read the new token');
    } finally {
      await client.close();
    }
  });

  it('in a Pod: the projected token under the ServiceAccount directory, read again as it rotates', async () => {
    // The in-cluster layout (token, ca.crt, namespace) under a prefix, and the apiserver's address in
    // the environment, as the kubelet provides them.
    const root = join(kubeconfig.tokenFile, '..', 'pod-root');
    const dir = join(root, 'var/run/secrets/kubernetes.io/serviceaccount');
    mkdirSync(dir, { recursive: true });
    const adminConfig = parse(readFileSync(testKubeconfig(), 'utf8')) as {
      clusters: { cluster: { server: string; 'certificate-authority-data': string } }[];
    };
    const { server, 'certificate-authority-data': ca } = adminConfig.clusters[0]!.cluster;
    writeFileSync(join(dir, 'ca.crt'), Buffer.from(ca, 'base64'));
    writeFileSync(join(dir, 'namespace'), ns);
    const first = await secret('pod-token-1');
    const oldToken = await kubeconfig.rotate(first);
    writeFileSync(join(dir, 'token'), oldToken);
    const url = new URL(server);
    const env = { host: process.env.KUBERNETES_SERVICE_HOST, port: process.env.KUBERNETES_SERVICE_PORT };
    process.env.KUBERNETES_SERVICE_HOST = url.hostname;
    process.env.KUBERNETES_SERVICE_PORT = url.port;
    const kc = new KubeConfig();
    try {
      kc.loadFromCluster(root);
    } finally {
      for (const [k, v] of [
        ['KUBERNETES_SERVICE_HOST', env.host],
        ['KUBERNETES_SERVICE_PORT', env.port],
      ] as const) {
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
      }
    }
    const client = await KubeClient.fromKubeConfig(kc);
    try {
      assert.equal((await client.get(probe)).metadata.name, 'probe');
      writeFileSync(join(dir, 'token'), await kubeconfig.rotate(await secret('pod-token-2')));
      await admin.delete({ apiVersion: 'v1', kind: 'Secret', namespace: ns, name: first.name });
      await awaitRefused(oldToken);
      assert.equal((await client.get(probe)).metadata.name, 'probe', 'the client read the rotated token');
    } finally {
      await client.close();
    }
  });
});
