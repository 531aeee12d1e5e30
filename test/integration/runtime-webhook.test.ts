// A validating webhook served by the runtime refuses a create through the real apiserver, and keeps
// refusing across a serving-certificate rotation and a two-step CA rotation, without a restart.

import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { connect } from 'node:tls';
import { freePort } from '../../local/ports.ts';
import type { KubeClient, KubeObject } from '../../src/kube/client.ts';
import { ApiError } from '../../src/kube/errors.ts';
import { webhookLatency } from '../../src/kube/metrics.ts';
import { createCertificateAuthority, loadCertificateAuthority } from '../../src/kube/pki.ts';
import { WebhookCertificates } from '../../src/kube/webhook-certs.ts';
import { allow, deny, WebhookServer } from '../../src/kube/webhook-server.ts';
import { ensureNamespace, testClient, uniqueName } from '../support/cluster.ts';
import { configMapCreateWebhook } from '../support/test-webhook.ts';
import { waitFor } from '../support/wait.ts';

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
  // A second webhook in the same configuration, served with a certificate of the test's choosing:
  // it shows which CAs the apiserver trusts at a given moment.
  const probe = new WebhookServer();
  const configName = uniqueName('kvpool-test-webhook');
  const secretName = uniqueName('webhook-certs');
  let port: number;
  let probePort: number;

  const createLabelled = (label: string) =>
    client
      .create({
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: uniqueName('refused'), namespace: ns, labels: { [label]: 'true' } },
      } as KubeObject)
      .then(
        () => assert.fail(`the apiserver accepted a ConfigMap labelled ${label}`),
        (e: unknown) => e,
      );
  const createRefused = async () => {
    const err = await createLabelled('kvpool.test/refuse');
    assert.ok(err instanceof ApiError, String(err));
    assert.match(
      err.message,
      /metadata\.labels\[kvpool\.test\/refuse\]: refused by the test webhook: remove the label/,
    );
  };
  const probeAnswer = async () => {
    const err = await createLabelled('kvpool.test/probe');
    return err instanceof Error ? err.message : String(err);
  };
  const secretPem = async (key: string) => {
    const secret = await client.get<KubeObject & { data: Record<string, string> }>({
      apiVersion: 'v1',
      kind: 'Secret',
      namespace: ns,
      name: secretName,
    });
    return secret.data[key] && Buffer.from(secret.data[key], 'base64').toString();
  };

  before(async () => {
    client = await testClient();
    await ensureNamespace(client, ns);
    port = await freePort();
    probePort = await freePort();
    probe.handle('/probe', () => deny('refused by the probe webhook'));
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
        configMapCreateWebhook('configmaps.kvpool.test', `https://127.0.0.1:${port}/validate-configmaps`, ns),
        {
          ...configMapCreateWebhook('probe.kvpool.test', `https://127.0.0.1:${probePort}/probe`, ns),
          objectSelector: { matchLabels: { 'kvpool.test/probe': 'true' } },
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
    // The apiserver loads the configuration through its own watch: wait until it calls the webhook.
    await waitFor(() => createRefused().then(() => true), { what: 'the apiserver to call the test webhook' });
  });
  after(async () => {
    await server.stop();
    await probe.stop();
    await client?.delete({
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingWebhookConfiguration',
      name: configName,
    });
    await client?.close();
  });

  it('refuses a create with its own message, and lets others through', async () => {
    // Answers to this path, as controller-runtime's webhook latency histogram counts them.
    const handled = async () =>
      (await webhookLatency.get()).values
        .filter(
          (v) =>
            v.metricName === 'controller_runtime_webhook_latency_seconds_count' &&
            v.labels.webhook === '/validate-configmaps',
        )
        .reduce((sum, v) => sum + v.value, 0);
    const before = await handled();
    await createRefused();
    await client.create({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: uniqueName('ok'), namespace: ns },
    } as KubeObject);
    // Each answer is timed in the webhook's histogram: the refusal and the admitted create.
    await waitFor(async () => ((await handled()) >= before + 2 ? true : undefined), {
      what: 'both answers timed',
    });
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

  it('rotates the CA in two steps: the apiserver trusts the new CA before anything it signed is served', async () => {
    const oldCa = new X509Certificate((await secretPem('ca.crt'))!);
    // A CA the apiserver was never given is refused: the probe can tell trusted from not.
    const stranger = await createCertificateAuthority('stranger');
    const issueFrom = (ca: { certPem: string; keyPem: string }) =>
      loadCertificateAuthority(ca).issue({
        commonName: '127.0.0.1',
        hosts: ['127.0.0.1'],
        usage: 'server',
        validDays: 1,
      });
    await probe.start(await issueFrom(stranger), probePort, '127.0.0.1');
    assert.match(await probeAnswer(), /failed calling webhook "probe\.kvpool\.test".*certificate/s);

    const t = Date.now() + 3000 * day;
    await certs.ensure(t);
    const stagedCert = await secretPem('ca-staged.crt');
    const stagedKey = await secretPem('ca-staged.key');
    assert.ok(stagedCert && stagedKey, 'a due CA is staged first');
    const staged = { certPem: stagedCert, keyPem: stagedKey };
    assert.ok(
      new X509Certificate(certs.serving!.certPem).verify(oldCa.publicKey),
      'what is served is still signed by the old CA',
    );
    assert.equal(certs.caBundle, [oldCa.toString(), staged.certPem].join(''), 'the bundle carries both');

    probe.updateCertificate(await issueFrom(staged));
    await waitFor(
      async () => ((await probeAnswer()).includes('refused by the probe webhook') ? true : undefined),
      { what: 'the apiserver to trust the staged CA' },
    );
    // (At this simulated time every serving certificate issued today looks expired, so each call
    // reissues one: from the old CA until the staged one is promoted.) The next pass reads the bundle
    // back carrying the staged CA: the propagation period counts from then.
    const published = t + 60_000;
    await certs.ensure(published);
    assert.equal(await secretPem('ca-staged-published-since'), new Date(published).toISOString());
    await certs.ensure(published + 5 * 60_000 - 1);
    assert.equal(
      await secretPem('ca-staged.crt'),
      staged.certPem,
      'not promoted before the propagation period',
    );
    assert.ok(new X509Certificate(certs.serving!.certPem).verify(oldCa.publicKey));

    assert.equal(await certs.ensure(published + 5 * 60_000), true, 'promoted after it');
    server.updateCertificate(certs.serving!);
    const promoted = new X509Certificate(staged.certPem);
    assert.ok(new X509Certificate(certs.serving!.certPem).verify(promoted.publicKey));
    assert.equal(await secretPem('ca.crt'), staged.certPem);
    assert.equal(await secretPem('ca-previous.crt'), oldCa.toString());
    assert.equal(await secretPem('ca-staged.crt'), undefined);
    const config = await client.get<KubeObject & { webhooks: { clientConfig: { caBundle: string } }[] }>({
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingWebhookConfiguration',
      name: configName,
    });
    assert.equal(Buffer.from(config.webhooks[0]!.clientConfig.caBundle, 'base64').toString(), certs.caBundle);
    // Once, at once: the apiserver already trusted the promoted CA, whichever bundle it holds now.
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
