// Where the webhook's serving certificate comes from. Self-managed, a certificate that lacks one of the
// names clients use (a renamed Service) is issued again before it is served. From cert-manager
// (webhook.certificates.source=cert-manager) the operator serves the pair in the issuer's Secret and
// picks up a renewal, and never writes the Secret or a CA bundle: cert-manager and its CA injector do.
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import type { KubeClient, KubeObject } from '../../src/kube/client.ts';
import { createCertificateAuthority } from '../../src/kube/pki.ts';
import { WebhookCertificates } from '../../src/kube/webhook-certs.ts';
import { ensureNamespace, testClient, uniqueName } from '../support/cluster.ts';

const ns = 'webhook-external';
type Secret = KubeObject & { type?: string; data: Record<string, string> };
type Configuration = KubeObject & { webhooks: { clientConfig: { caBundle?: string } }[] };
const b64 = (s: string) => Buffer.from(s).toString('base64');

describe('where the webhook certificate comes from', () => {
  let client: KubeClient;
  const secretName = uniqueName('issued');
  const configName = uniqueName('kvpool-external-webhook');
  const secretRef = { apiVersion: 'v1', kind: 'Secret', namespace: ns, name: secretName };
  const configRef = {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingWebhookConfiguration',
    name: configName,
  };
  const injected = b64('the CA the injector set');

  /** What cert-manager writes: a kubernetes.io/tls Secret with the issuer's CA, no CA key. */
  const issue = async () => {
    const ca = await createCertificateAuthority('issuer');
    const leaf = await ca.issue({ commonName: 'kvpool-webhook', hosts: ['127.0.0.1'], usage: 'server' });
    const data = { 'ca.crt': b64(ca.certPem), 'tls.crt': b64(leaf.certPem), 'tls.key': b64(leaf.keyPem) };
    return { leaf, data };
  };

  before(async () => {
    client = await testClient();
    await ensureNamespace(client, ns);
    const { data } = await issue();
    await client.create({
      ...secretRef,
      metadata: { name: secretName, namespace: ns },
      type: 'kubernetes.io/tls',
      data,
    } as Secret);
    await client.create({
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingWebhookConfiguration',
      metadata: { name: configName },
      webhooks: [
        {
          name: 'external.kvpool.test',
          clientConfig: { url: 'https://127.0.0.1:1/never', caBundle: injected },
          rules: [
            { apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE'], resources: ['configmaps'] },
          ],
          objectSelector: { matchLabels: { [configName]: 'true' } },
          failurePolicy: 'Ignore',
          sideEffects: 'None',
          admissionReviewVersions: ['v1'],
        },
      ],
    } as KubeObject);
  });
  after(async () => {
    await client.delete(configRef);
    await client.close();
  });

  it('serves the issued pair, follows a renewal, and writes neither the Secret nor the CA bundle', async () => {
    const certs = new WebhookCertificates(client, {
      namespace: ns,
      secretName,
      hosts: ['127.0.0.1'],
      validatingConfigurations: [configName],
      external: true,
    });
    const before = await client.get<Secret>(secretRef);
    assert.equal(await certs.ensure(), true, 'a pair to serve');
    assert.equal(certs.serving?.certPem, Buffer.from(before.data['tls.crt']!, 'base64').toString());
    assert.equal(await certs.ensure(), false, 'unchanged');

    const renewed = await issue();
    await client.replace({ ...before, data: renewed.data });
    const written = await client.get<Secret>(secretRef);
    assert.equal(await certs.ensure(), true, 'the renewal is picked up');
    assert.equal(certs.serving?.certPem, renewed.leaf.certPem);

    assert.equal(
      (await client.get<Secret>(secretRef)).metadata.resourceVersion,
      written.metadata.resourceVersion,
    );
    const config = await client.get<Configuration>(configRef);
    assert.equal(config.webhooks[0]!.clientConfig.caBundle, injected, 'the injector’s CA bundle stands');
  });

  it('self-managed: issues the serving certificate again when it lacks one of the names', async () => {
    const name = uniqueName('self-managed');
    const hosts = (service: string) => [service, `${service}.${ns}`, `${service}.${ns}.svc`];
    const first = new WebhookCertificates(client, { namespace: ns, secretName: name, hosts: hosts('old') });
    await first.ensure();
    const before = first.serving!.certPem;
    const caBefore = first.caBundle;
    const renamed = new WebhookCertificates(client, { namespace: ns, secretName: name, hosts: hosts('new') });
    assert.equal(await renamed.ensure(), true);
    const cert = new X509Certificate(renamed.serving!.certPem);
    assert.notEqual(renamed.serving!.certPem, before);
    for (const h of hosts('new')) assert.equal(cert.checkHost(h, { wildcards: false }), h);
    assert.equal(renamed.caBundle, caBefore, 'the same CA signs it: the published bundle stands');
  });

  it('self-managed: the labels and annotations the chart put on the Secret survive the operator’s write', async () => {
    const name = uniqueName('chart-made');
    const labels = { 'app.kubernetes.io/managed-by': 'Helm', 'app.kubernetes.io/name': 'kvpool' };
    const annotations = { 'meta.helm.sh/release-name': 'kvpool', 'meta.helm.sh/release-namespace': ns };
    await client.create({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name, namespace: ns, labels, annotations },
      type: 'Opaque',
    } as Secret);
    const certs = new WebhookCertificates(client, { namespace: ns, secretName: name, hosts: ['127.0.0.1'] });
    assert.equal(await certs.ensure(), true, 'a pair was issued and written');
    const written = await client.get<Secret>({ ...secretRef, name });
    assert.ok(written.data['tls.crt'], 'the Secret holds the serving certificate');
    assert.deepEqual(written.metadata.labels, labels);
    assert.deepEqual(written.metadata.annotations, annotations);
  });
});
