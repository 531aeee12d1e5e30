// Emptying a deleted backend's tier cannot be undone: a path stored before admission refused system
// directories (or spelled so that it names one) is left as it is, with a Warning on the node, and no
// cleanup Pod is created for it; a path of its own is emptied by one Pod per node.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { KVCacheBackend } from '../../src/api/types.ts';
import { TierCleanup } from '../../src/controllers/backend/tier-cleanup.ts';
import type { OperatorContext } from '../../src/operator-io/operator-context.ts';

function deletedBackend(path: string): KVCacheBackend {
  return {
    apiVersion: 'worker.gpustack.ai/v1',
    kind: 'KVCacheBackend',
    metadata: { name: 'old-store', uid: 'u-old', deletionTimestamp: '2026-01-01T00:00:00Z' },
    spec: {
      type: 'Mooncake',
      image: 'docker.io/kvpool/kvpool-store:test',
      connection: {
        managed: {
          leader: { replicas: 1 },
          members: [
            {
              nodeSelector: { 'kubernetes.io/os': 'linux' },
              medium: 'DRAM',
              capacityPerMember: '1Gi',
              localDisks: [{ path, capacity: '10Gi', cleanAfterDelete: true }],
            },
          ],
        },
      },
    },
  } as unknown as KVCacheBackend;
}

/** A context whose API holds one Linux node and the deleted backend; it records writes and events. */
function fakeContext(backend: KVCacheBackend) {
  const writes: string[] = [];
  const events: { reason: string; message: string }[] = [];
  const node = { metadata: { name: 'node-1', uid: 'n-1', labels: { 'kubernetes.io/os': 'linux' } } };
  const created: { spec?: { imagePullSecrets?: { name: string }[] } }[] = [];
  const ctx = {
    namespace: 'gpustack-system',
    client: {
      async list(ref: { kind: string }) {
        return { items: ref.kind === 'Node' ? [node] : [backend] };
      },
      async find() {
        return undefined;
      },
      async create(obj: { kind: string; metadata: { name: string } }) {
        writes.push(`create ${obj.kind} ${obj.metadata.name}`);
        created.push(obj as (typeof created)[number]);
        return obj;
      },
      async delete(ref: { name: string }) {
        writes.push(`delete ${ref.name}`);
      },
    },
    events: {
      async record(_obj: unknown, _type: string, reason: string, message: string) {
        events.push({ reason, message });
      },
    },
    settings: { get: () => '', list: () => ['registry-creds'] },
  } as unknown as OperatorContext;
  return { ctx, writes, events, created };
}

describe('TierCleanup', () => {
  for (const path of ['/etc', '/var/lib', '/var//lib/', '/usr/local/../lib', '/var/lib/kubelet/kvcache']) {
    it(`leaves a stored tier path ${path} as it is: no cleanup Pod, a Warning naming the path`, async () => {
      const backend = deletedBackend(path);
      const { ctx, writes, events } = fakeContext(backend);
      const outcome = await new TierCleanup(ctx).run(backend);
      assert.deepEqual(writes, [], 'nothing is created or deleted');
      assert.equal(outcome.done, true);
      assert.equal(events.length, 1);
      assert.equal(events[0]!.reason, 'KVCacheTierNotCleaned');
      assert.match(
        events[0]!.message,
        new RegExp(
          `^${path.replaceAll('.', '\\.')} of backend old-store was left as it is: localDisks\\[\\]\\.path must not`,
        ),
      );
    });
  }

  it('empties a directory of its own with one cleanup Pod per node', async () => {
    const backend = deletedBackend('/var/lib/kvcache');
    const { ctx, writes, events, created } = fakeContext(backend);
    const outcome = await new TierCleanup(ctx).run(backend);
    assert.deepEqual(writes, ['create Pod old-store-tier-clean-0-node-1']);
    assert.deepEqual(
      created[0]?.spec?.imagePullSecrets,
      [{ name: 'registry-creds' }],
      'the operator-wide pull secret',
    );
    assert.deepEqual(events, []);
    assert.equal(outcome.done, false, 'waits for the Pod');
  });
});
