// A staged webhook CA is promoted only once the API server has been given it. Here the operator's
// account may read the webhook configuration but not patch it (as when the API server refuses the
// patch, or the operator restarts between staging the CA and patching the bundle): however long the
// CA has been staged, nothing it signs is served, and admission keeps working. Once the patch goes
// through, the wait starts from when the bundle was seen to carry the CA, and a restarted operator
// neither restarts that wait nor skips it.

import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { freePort } from '../../local/ports.ts';
import { KubeClient, type KubeObject } from '../../src/kube/client.ts';
import { ApiError } from '../../src/kube/errors.ts';
import { WebhookCertificates } from '../../src/kube/webhook-certs.ts';
import { allow, deny, type ServingCertificate, WebhookServer } from '../../src/kube/webhook-server.ts';
import { ensureNamespace, testClient, testKubeconfig, uniqueName } from '../support/cluster.ts';
import { type AccountKubeconfig, accountKubeconfig } from '../support/operator-access.ts';
import { configMapCreateWebhook } from '../support/test-webhook.ts';
import { waitFor } from '../support/wait.ts';

const ns = 'webhook-promotion';
const account = 'webhook-writer';
const day = 86_400_000;
const minute = 60_000;
type Secret = KubeObject & { data?: Record<string, string> };
type Configuration = KubeObject & { webhooks: { clientConfig: { caBundle?: string } }[] };

describe('a staged webhook CA is promoted only once the API server has it', () => {
  let admin: KubeClient;
  let operatorClient: KubeClient;
  let kubeconfig: AccountKubeconfig;
  const server = new WebhookServer();
  const configName = uniqueName('kvpool-promotion-webhook');
  const secretName = uniqueName('webhook-certs');
  const roleName = uniqueName('kvpool-promotion-webhook');
  const secretRef = { apiVersion: 'v1', kind: 'Secret', namespace: ns, name: secretName };
  const configRef = {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingWebhookConfiguration',
    name: configName,
  };
  const clusterRole = (verbs: string[]) =>
    ({
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: { name: roleName },
      rules: [
        {
          apiGroups: ['admissionregistration.k8s.io'],
          resources: ['validatingwebhookconfigurations'],
          resourceNames: [configName],
          verbs,
        },
      ],
    }) as KubeObject;
  const operator = () =>
    new WebhookCertificates(operatorClient, {
      namespace: ns,
      secretName,
      hosts: ['127.0.0.1'],
      validatingConfigurations: [configName],
    });
  const secretPem = async (key: string) => {
    const data = (await admin.get<Secret>(secretRef)).data ?? {};
    return data[key] && Buffer.from(data[key], 'base64').toString();
  };
  const publishedBundle = async () =>
    Buffer.from(
      (await admin.get<Configuration>(configRef)).webhooks[0]!.clientConfig.caBundle ?? '',
      'base64',
    ).toString();
  const createRefused = async () => {
    const err = await admin
      .create({
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: uniqueName('refused'), namespace: ns, labels: { 'kvpool.test/refuse': 'true' } },
      } as KubeObject)
      .then(
        () => assert.fail('the apiserver accepted a ConfigMap the webhook refuses'),
        (e: unknown) => e,
      );
    assert.ok(err instanceof ApiError, String(err));
    assert.match(err.message, /refused by the test webhook/);
  };
  const patchRefused = (err: unknown) => err instanceof ApiError && err.status === 403;
  let port: number;
  /** Serves `cert` on fresh connections: the API server keeps a connection, and its handshake, alive. */
  const serve = async (cert: ServingCertificate) => {
    await server.stop();
    await server.start(cert, port, '127.0.0.1');
  };

  before(async () => {
    admin = await testClient();
    await ensureNamespace(admin, ns);
    const meta = { name: account, namespace: ns };
    const access = [
      { apiVersion: 'v1', kind: 'ServiceAccount', metadata: meta },
      // The chart's certificate Secret: created empty, the operator may read and update it only.
      { apiVersion: 'v1', kind: 'Secret', metadata: { name: secretName, namespace: ns }, type: 'Opaque' },
      {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'Role',
        metadata: meta,
        rules: [
          { apiGroups: [''], resources: ['secrets'], resourceNames: [secretName], verbs: ['get', 'update'] },
        ],
      },
      {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'RoleBinding',
        metadata: meta,
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: account },
        subjects: [{ kind: 'ServiceAccount', name: account, namespace: ns }],
      },
      clusterRole(['get', 'patch']),
      {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'ClusterRoleBinding',
        metadata: { name: roleName },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: roleName },
        subjects: [{ kind: 'ServiceAccount', name: account, namespace: ns }],
      },
    ];
    for (const obj of access) await admin.apply(obj as KubeObject, { fieldManager: 'kvpool-test' });
    kubeconfig = await accountKubeconfig(admin, testKubeconfig(), ns, account);
    operatorClient = await KubeClient.fromKubeconfigFile(kubeconfig.path);

    port = await freePort();
    server.handle('/validate-configmaps', (req) =>
      req.object?.metadata.labels?.['kvpool.test/refuse'] === 'true'
        ? deny('refused by the test webhook')
        : allow(),
    );
    await admin.create({
      ...configRef,
      metadata: { name: configName },
      webhooks: [
        configMapCreateWebhook('configmaps.kvpool.test', `https://127.0.0.1:${port}/validate-configmaps`, ns),
      ],
    } as KubeObject);
    const certs = operator();
    await waitFor(() => certs.ensure().then(() => true), { what: 'the first certificates and CA bundle' });
    await server.start(certs.serving!, port, '127.0.0.1');
    await waitFor(() => createRefused().then(() => true), { what: 'the apiserver to call the test webhook' });
  });
  after(async () => {
    await server.stop();
    await admin?.delete(configRef);
    await admin?.delete({
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      name: roleName,
    });
    await admin?.delete({ apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', name: roleName });
    await operatorClient?.close();
    kubeconfig?.remove();
    await admin?.close();
  });

  it('never promotes a staged CA the CA bundle lacks, and counts the wait from when it carries it', async () => {
    const oldCa = (await secretPem('ca.crt'))!;
    // The API server now refuses the operator's patch of the CA bundle.
    await admin.apply(clusterRole(['get']), { fieldManager: 'kvpool-test' });
    const noopPatch = () =>
      operatorClient.jsonPatch(configRef, [{ op: 'test', path: '/metadata/name', value: configName }]);
    await waitFor(
      () =>
        noopPatch().then(
          () => undefined,
          (e: unknown) => (patchRefused(e) ? true : undefined),
        ),
      {
        what: 'the operator to lose the right to patch the configuration',
      },
    );
    const certs = operator();
    const t = Date.now() + 3000 * day;
    await assert.rejects(certs.ensure(t), patchRefused);
    const staged = await secretPem('ca-staged.crt');
    assert.ok(staged, 'a due CA is staged');
    assert.ok(!(await publishedBundle()).includes(staged), 'the API server was not given it');

    // Long past the propagation period, and by an operator restarted since: still not promoted.
    for (const [now, replica] of [
      [t + 5 * minute, certs],
      [t + day, operator()],
    ] as const) {
      await assert.rejects(replica.ensure(now), patchRefused);
      await serve(replica.serving!);
      await createRefused();
      assert.equal(await secretPem('ca.crt'), oldCa, 'the old CA still signs what is served');
      assert.ok(new X509Certificate(replica.serving!.certPem).verify(new X509Certificate(oldCa).publicKey));
    }

    // The patch goes through: the bundle the API server holds carries the staged CA from then on.
    await admin.apply(clusterRole(['get', 'patch']), { fieldManager: 'kvpool-test' });
    await waitFor(() => noopPatch().then(() => true), { what: 'the operator to regain the right to patch' });
    const patched = t + day + minute;
    await certs.ensure(patched);
    assert.ok((await publishedBundle()).includes(staged));
    await certs.ensure(patched + minute);
    assert.equal(
      await secretPem('ca-staged-published-since'),
      new Date(patched + minute).toISOString(),
      'the wait starts when the bundle is first seen to carry the staged CA',
    );

    // A restarted operator keeps that moment: it neither waits again nor promotes early.
    const promotion = patched + minute + 5 * minute;
    await operator().ensure(promotion - 1);
    assert.equal(await secretPem('ca-staged.crt'), staged, 'not promoted before the propagation period');
    const restarted = operator();
    assert.equal(await restarted.ensure(promotion), true, 'promoted after it');
    assert.equal(await secretPem('ca.crt'), staged);
    assert.equal(await secretPem('ca-previous.crt'), oldCa);
    assert.ok(new X509Certificate(restarted.serving!.certPem).verify(new X509Certificate(staged).publicKey));
    await serve(restarted.serving!);
    // (The propagation period is simulated here: the API server loads the bundle within moments.)
    await waitFor(() => createRefused().then(() => true), { what: 'admission through the promoted CA' });
  });
});
