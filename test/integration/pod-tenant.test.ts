// A Pod that names a store tenant itself, on a real apiserver with the operator's webhooks: in a
// namespace holding a Binding it may name only that Binding's domain, whether it opts in to injection
// or not; a Pod elsewhere, or one that names no tenant, is not judged (docs/decisions/0034).

import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Container, Pod } from 'kubernetes-types/core/v1.js';
import { ApiError } from '../../src/kube/errors.ts';
import type { KubeObject } from '../../src/kube/object.ts';
import type { IsolatedCluster } from '../support/isolated-cluster.ts';
import type { MooncakeStore } from '../support/mooncake-store.ts';
import type { InProcessOperator } from '../support/operator.ts';
import { createReadyBinding, startPoolStack, stopPoolStack } from '../support/pool-stack.ts';

const sglang: Container = {
  name: 'engine',
  image: 'gpustack/runner:cuda12.9-sglang0.5.18',
  command: ['python3', '-m', 'sglang.launch_server', '--model-path', 'Qwen/Qwen2.5-7B-Instruct'],
};

function engine(namespace: string, container: Container, optedIn = false): KubeObject<Pod> {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      generateName: 'engine-',
      namespace,
      ...(optedIn
        ? {
            labels: { 'kvcache.gpustack.ai/inject': 'true' },
            annotations: { 'kvcache.gpustack.ai/binding': 'team-a', 'kvcache.gpustack.ai/engine': 'SGLang' },
          }
        : {}),
    },
    spec: { containers: [container] },
  };
}

const tenantEnv = (value: string) => [{ name: 'MOONCAKE_TENANT_ID', value }];

describe('a Pod naming a store tenant', () => {
  let cluster: IsolatedCluster;
  let store: MooncakeStore;
  let operator: InProcessOperator;
  const create = (pod: KubeObject<Pod>) => cluster.client.create(pod, { dryRun: true });
  const refusal = async (pod: KubeObject<Pod>): Promise<string> => {
    const err = await create(pod).then(
      () => undefined,
      (e: unknown) => e,
    );
    assert.ok(
      err instanceof ApiError,
      `expected a refusal, the Pod was admitted: ${JSON.stringify(pod.spec)}`,
    );
    return err.message;
  };

  before(async () => {
    ({ cluster, store, operator } = await startPoolStack({
      namespaces: ['team-a', 'elsewhere'],
      operator: { webhooks: true },
    }));
    await createReadyBinding(cluster.client, 'team-a', 'team-a', { ceiling: '32Mi', domain: 'chat' });
  });
  after(() => stopPoolStack({ operator, store, cluster }));

  it('refuses a Pod without the injection label that names another tenant, naming the field and the fix', async () => {
    const message = await refusal(engine('team-a', { ...sglang, env: tenantEnv('team-b') }));
    assert.match(
      message,
      /store tenant: spec\.containers\[0\]\.env\[0\]: MOONCAKE_TENANT_ID names store tenant "team-b", but a Pod in this namespace may use only the domains of its KVCachePoolBindings: chat \(KVCachePoolBinding team-a\); write one of them, or let the injection write it/,
    );
    const inline = [...sglang.command!, '--hicache-storage-backend-extra-config', '{"tenant_id": "team-b"}'];
    assert.match(
      await refusal(engine('team-a', { ...sglang, command: inline })),
      /spec\.containers\[0\]\.command\[6\]: tenant_id names store tenant "team-b"/,
    );
  });

  it('admits the Binding’s own domain, a Pod naming no tenant, and any Pod where no Binding is', async () => {
    await create(engine('team-a', { ...sglang, env: tenantEnv('chat') }));
    await create(engine('team-a', sglang));
    await create(engine('elsewhere', { ...sglang, env: tenantEnv('team-b') }));
  });

  it('admits an opted-in Pod with the tenant the injection wrote, and refuses one that writes its own', async () => {
    const injected = await create(engine('team-a', sglang, true));
    const env = injected.spec!.containers[0]!.env ?? [];
    assert.deepEqual(
      env.filter((e) => e.name === 'MOONCAKE_TENANT_ID').map((e) => e.value),
      ['chat'],
    );
    assert.match(
      await refusal(engine('team-a', { ...sglang, env: tenantEnv('chat') }, true)),
      /KV cache injection: spec\.containers\[0\]\.env\[0\]: env MOONCAKE_TENANT_ID names the store tenant, which is the Binding's domain and which the injection writes/,
    );
  });
});
