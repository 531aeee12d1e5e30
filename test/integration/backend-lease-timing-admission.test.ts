// `leader.leaseTiming` through the real apiserver: unsafe or malformed timings are refused with a
// message naming the field and the fix; an empty one is stored with the defaults the store runs.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { KVCacheBackend } from '../../src/api/types.ts';
import type { KubeClient } from '../../src/kube/client.ts';
import { ApiError } from '../../src/kube/errors.ts';
import { testClient, uniqueName } from '../support/cluster.ts';

const field = 'spec.connection.managed.leader.leaseTiming';

function backend(leader: Record<string, unknown>): KVCacheBackend {
  return {
    apiVersion: 'worker.gpustack.ai/v1',
    kind: 'KVCacheBackend',
    metadata: { name: uniqueName('timing') },
    spec: {
      connection: {
        managed: {
          leader,
          members: [
            { nodeSelector: { 'kubernetes.io/os': 'linux' }, medium: 'DRAM', capacityPerMember: '1Gi' },
          ],
        },
      },
    },
  } as KVCacheBackend;
}

const refusals: [string, Record<string, unknown>, string, string][] = [
  [
    'a lease duration in fractions of a second',
    { leaseTiming: { leaseDuration: '7500ms' } },
    `${field}.leaseDuration`,
    'must be whole seconds, for example 8s',
  ],
  [
    'a renew deadline too close to the lease duration',
    { leaseTiming: { leaseDuration: '8s', renewDeadline: '7800ms' } },
    `${field}.renewDeadline`,
    'at least 500ms below leaseDuration',
  ],
  [
    'a renew deadline of the default lease duration',
    { leaseTiming: { renewDeadline: '8s' } },
    `${field}.renewDeadline`,
    'for example leaseDuration 8s, renewDeadline 7s',
  ],
  [
    'a retry period above half the renew deadline',
    { leaseTiming: { retryPeriod: '4s' } },
    `${field}.retryPeriod`,
    'at most half of renewDeadline',
  ],
  [
    'a retry period below 100ms',
    { leaseTiming: { retryPeriod: '50ms' } },
    `${field}.retryPeriod`,
    'at least 100ms',
  ],
  [
    'a duration with a unit the store does not read',
    { leaseTiming: { retryPeriod: '1m' } },
    `${field}.retryPeriod`,
    'a whole number of ms or s, for example 250ms',
  ],
  [
    'a timing without an election',
    { electionBackend: 'None', leaseTiming: { retryPeriod: '500ms' } },
    field,
    'times the Lease election only: remove it',
  ],
];

describe('leader.leaseTiming admission', () => {
  let client: KubeClient;
  before(async () => {
    client = await testClient();
  });
  after(() => client.close());

  for (const [title, leader, path, says] of refusals) {
    it(`refuses ${title}`, async () => {
      const err = await client.create(backend(leader)).then(
        () => assert.fail('the apiserver accepted it'),
        (e: unknown) => e,
      );
      assert.ok(err instanceof ApiError, String(err));
      assert.equal(err.status, 422, err.message);
      assert.ok(
        err.causes.some((c) => c.field === path),
        `expected a cause on ${path}: ${JSON.stringify(err.causes)}`,
      );
      assert.ok(err.message.includes(says), `message lacks "${says}": ${err.message}`);
    });
  }

  it('stores an empty timing with the defaults, and accepts a slower safe one', async () => {
    const stored = await client.create(backend({ leaseTiming: {} }));
    assert.deepEqual(stored.spec.connection.managed!.leader.leaseTiming, {
      leaseDuration: '8s',
      renewDeadline: '7s',
      retryPeriod: '250ms',
    });
    await client.create(
      backend({ leaseTiming: { leaseDuration: '15s', renewDeadline: '10s', retryPeriod: '2s' } }),
    );
  });
});
