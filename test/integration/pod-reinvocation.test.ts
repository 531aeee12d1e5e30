// Pod injection beside another mutating webhook on a real apiserver: a sidecar injector (served by this
// test, as a service mesh's would be) runs after kvpool's webhook and changes the Pod, so the apiserver
// calls kvpool's webhook again (reinvocationPolicy IfNeeded). The Pod is created, injected once.

import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { freePort } from '../../local/ports.ts';
import type { KubeObject } from '../../src/kube/object.ts';
import { createCertificateAuthority, loadCertificateAuthority } from '../../src/kube/pki.ts';
import { allow, deny, WebhookServer } from '../../src/kube/webhook-server.ts';
import type { EnginePod } from '../builders/index.ts';
import type { IsolatedCluster } from '../support/isolated-cluster.ts';
import type { MooncakeStore } from '../support/mooncake-store.ts';
import type { InProcessOperator } from '../support/operator.ts';
import { createReadyBinding, startPoolStack, stopPoolStack } from '../support/pool-stack.ts';
import { waitFor } from '../support/wait.ts';

const sidecarLabel = 'mesh.example/inject';

describe('Pod injection with a sidecar injector after it', () => {
  let cluster: IsolatedCluster;
  let store: MooncakeStore;
  let operator: InProcessOperator;
  const sidecar = new WebhookServer();
  /** What the sidecar injector saw of the engine container each time it was called. */
  const seen: string[][] = [];

  before(async () => {
    ({ cluster, store, operator } = await startPoolStack({
      namespaces: ['team-a'],
      operator: { webhooks: true },
    }));
    await createReadyBinding(cluster.client, 'team-a', 'team-a', { ceiling: '32Mi', domain: 'chat' });

    const ca = await createCertificateAuthority('sidecar-injector');
    const port = await freePort();
    sidecar.handle('/inject', (req) => {
      const pod = req.object as unknown as EnginePod;
      if (pod.metadata.labels?.[sidecarLabel] === 'probe') return deny('the sidecar injector answers');
      seen.push(pod.spec.containers[0]?.args ?? []);
      return allow(undefined, [
        {
          op: 'add',
          path: '/spec/containers/-',
          value: { name: 'mesh-proxy', image: 'mesh/proxy:1', args: ['proxy', 'sidecar'] },
        },
        { op: 'add', path: '/spec/volumes/-', value: { name: 'mesh-certs', emptyDir: {} } },
      ]);
    });
    await sidecar.start(
      await loadCertificateAuthority(ca).issue({
        commonName: '127.0.0.1',
        hosts: ['127.0.0.1'],
        usage: 'server',
        validDays: 1,
      }),
      port,
      '127.0.0.1',
    );
    // Configurations are called in name order: this one sorts after kvpool's.
    await cluster.client.create({
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'MutatingWebhookConfiguration',
      metadata: { name: 'zz-sidecar-injector' },
      webhooks: [
        {
          name: 'sidecar.mesh.example',
          clientConfig: {
            url: `https://127.0.0.1:${port}/inject`,
            caBundle: Buffer.from(ca.certPem).toString('base64'),
          },
          rules: [{ apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE'], resources: ['pods'] }],
          objectSelector: { matchExpressions: [{ key: sidecarLabel, operator: 'Exists' }] },
          failurePolicy: 'Fail',
          sideEffects: 'None',
          admissionReviewVersions: ['v1'],
          timeoutSeconds: 5,
        },
      ],
    } as KubeObject);
    await waitFor(
      () =>
        cluster.client
          .create(
            {
              apiVersion: 'v1',
              kind: 'Pod',
              metadata: { name: 'probe', namespace: 'team-a', labels: { [sidecarLabel]: 'probe' } },
              spec: { containers: [{ name: 'probe', image: 'probe' }] },
            } as KubeObject,
            { dryRun: true },
          )
          .then(
            () => undefined,
            (err: unknown) => (String(err).includes('the sidecar injector answers') ? true : undefined),
          ),
      { what: 'the apiserver to call the sidecar injector' },
    );
  });
  after(async () => {
    await operator?.stop();
    await sidecar.stop();
    await stopPoolStack({ store, cluster });
  });

  it('creates an opted-in Pod injected exactly once, with the sidecar beside it', async () => {
    const created = await cluster.client.create<EnginePod>({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: {
        name: 'chat',
        namespace: 'team-a',
        labels: { 'kvcache.gpustack.ai/inject': 'true', [sidecarLabel]: 'true' },
        annotations: { 'kvcache.gpustack.ai/binding': 'team-a', 'kvcache.gpustack.ai/engine': 'vLLM' },
      },
      spec: {
        containers: [
          {
            name: 'engine',
            image: 'gpustack/runner:cuda12.9-vllm0.29.0',
            command: ['vllm', 'serve', 'Qwen/Qwen2.5-7B-Instruct'],
          },
        ],
      },
    } as EnginePod);
    assert.ok(
      seen.some((args) => args.includes('--kv-transfer-config')),
      'the sidecar injector ran after the injection',
    );
    assert.deepEqual(
      created.spec.containers.map((c) => c.name),
      ['engine', 'mesh-proxy'],
    );
    const args = created.spec.containers[0]!.args ?? [];
    const count = (flag: string) => args.filter((a) => a === flag).length;
    assert.deepEqual(
      ['--kv-transfer-config', '--kv-cache-dtype', '--block-size'].map(count),
      [1, 1, 1],
      `injected once: ${args.join(' ')}`,
    );
    assert.deepEqual(
      (created.spec.volumes ?? []).map((v) => v.name).filter((n) => !n.startsWith('kube-api-access')),
      ['gpustack-kvcache-config', 'mesh-certs'],
    );
    const env = (created.spec.containers[0]!.env ?? []).map((e) => e.name);
    assert.equal(env.filter((n) => n === 'MOONCAKE_CONFIG_PATH').length, 1);
    const record = JSON.parse(created.metadata.annotations?.['kvcache.gpustack.ai/injected'] ?? '{}');
    assert.equal(record.domain, 'chat');
  });
});
