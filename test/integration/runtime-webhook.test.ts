// A validating webhook served by the runtime refuses a create through the real apiserver, and keeps
// refusing across a serving-certificate rotation and a CA rotation, without a restart.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { connect } from 'node:tls';
import type { KubeClient, KubeObject } from '../../src/kube/client.ts';
import { ApiError } from '../../src/kube/errors.ts';
import { WebhookCertificates } from '../../src/kube/webhook-certs.ts';
import { allow, deny, WebhookServer } from '../../src/kube/webhook-server.ts';
import { freePort } from '../../src/local/ports.ts';
import { ensureNamespace, testClient, uniqueName } from '../support/cluster.ts';

const ns = 'webhook-test';
const day = 86_400_000;

function peerCertificate(port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port, rejectUnauthorized: false }, () => {
      resolve(socket.getPeerCertificate().fingerprint256);
      socket.end();
    });
    socket.on('error', reject);
  });
}

describe('validating webhook through the real apiserver', () => {
  let client: KubeClient;
  let certs: WebhookCertificates;
  const server = new WebhookServer();
  const configName = uniqueName('kvpool-test-webhook');
  const secretName = uniqueName('webhook-certs');
  let port: number;

  const createRefused = async () => {
    const err = await client
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
    assert.match(
      err.message,
      /metadata\.labels\[kvpool\.test\/refuse\]: refused by the test webhook: remove the label/,
    );
  };

  before(async () => {
    client = await testClient();
    await ensureNamespace(client, ns);
    port = await freePort();
    server.handle('/validate-configmaps', (req) =>
      req.object?.metadata.labels?.['kvpool.test/refuse'] === 'true'
        ? deny('metadata.labels[kvpool.test/refuse]: refused by the test webhook: remove the label')
        : allow(),
    );
    await client.create({
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingWebhookConfiguration',
      metadata: { name: configName },
      webhooks: [
        {
          name: 'configmaps.kvpool.test',
          clientConfig: { url: `https://127.0.0.1:${port}/validate-configmaps` },
          rules: [
            { apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE'], resources: ['configmaps'] },
          ],
          namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': ns } },
          failurePolicy: 'Fail',
          sideEffects: 'None',
          admissionReviewVersions: ['v1'],
          timeoutSeconds: 5,
        },
      ],
    } as KubeObject);
    certs = new WebhookCertificates(client, {
      namespace: ns,
      secretName,
      hosts: ['127.0.0.1'],
      validatingConfigurations: [configName],
    });
    await certs.ensure();
    await server.start(certs.serving!, port, '127.0.0.1');
  });
  after(async () => {
    await server.stop();
    await client?.delete({
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingWebhookConfiguration',
      name: configName,
    });
    await client?.close();
  });

  it('refuses a create with its own message, and lets others through', async () => {
    await createRefused();
    await client.create({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: uniqueName('ok'), namespace: ns },
    } as KubeObject);
  });

  it('keeps working after the serving certificate is rotated (same CA)', async () => {
    const bundle = certs.caBundle;
    const before = await peerCertificate(port);
    assert.equal(
      await certs.ensure(Date.now() + 300 * day),
      true,
      'a certificate with a third of its life left is renewed',
    );
    server.updateCertificate(certs.serving!);
    assert.notEqual(
      await peerCertificate(port),
      before,
      'the server presents the new certificate without a restart',
    );
    assert.equal(certs.caBundle, bundle, 'the CA stays');
    await createRefused();
  });

  it('keeps working after the CA is rotated (bundle carries old and new CA)', async () => {
    const oldBundle = certs.caBundle!;
    assert.equal(await certs.ensure(Date.now() + 3000 * day), true);
    server.updateCertificate(certs.serving!);
    assert.ok(
      certs.caBundle!.startsWith('-----BEGIN CERTIFICATE-----') && certs.caBundle!.includes(oldBundle),
    );
    const config = await client.get<KubeObject & { webhooks: { clientConfig: { caBundle: string } }[] }>({
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingWebhookConfiguration',
      name: configName,
    });
    assert.equal(Buffer.from(config.webhooks[0]!.clientConfig.caBundle, 'base64').toString(), certs.caBundle);
    await createRefused();
  });

  it('is idempotent: a second replica reading the Secret changes nothing', async () => {
    const replica = new WebhookCertificates(client, {
      namespace: ns,
      secretName,
      hosts: ['127.0.0.1'],
      validatingConfigurations: [configName],
    });
    await replica.ensure();
    assert.equal(replica.serving?.certPem, certs.serving?.certPem);
  });
});
