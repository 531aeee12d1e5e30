// The store's Lease timing: the schema's defaults are the program's, and the rendered flags follow
// `leader.leaseTiming` field by field.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { KVCacheBackendSpec } from '../../src/api/kvcache-backend.ts';
import type { KVCacheBackend } from '../../src/api/types.ts';
import { renderBackend } from '../../src/controllers/backend/render.ts';
import { leaseTimingProblems, storeLeaseDefaults } from '../../src/kube/lease-timing.ts';
import { durationMs, leaseTimings } from '../../src/vocabulary/backend-spec.ts';
import { backend } from '../builders/index.ts';

const ctx = { namespace: 'gpustack-system', defaultImage: 'kvpool/kvpool-store:test', boundNamespaces: [] };

function withTiming(timing: Record<string, string> | undefined): KVCacheBackend {
  const b = backend();
  b.spec.connection.managed!.leader.leaseTiming = timing;
  return b;
}

function storeFlags(b: KVCacheBackend): string[] {
  const deploy = renderBackend(b, ctx).leaderDeployment as unknown as {
    spec: { template: { spec: { containers: { args: string[] }[] } } };
  };
  return deploy.spec.template.spec.containers[0]!.args.filter((a) => /^--(lease|renew|retry)-/.test(a));
}

describe('leader.leaseTiming', () => {
  it('defaults, in the schema, to the program’s own defaults, which are a safe timing', () => {
    // biome-ignore lint/suspicious/noExplicitAny: walking the generated JSON schema
    const leader = (KVCacheBackendSpec as any).properties.connection.properties.managed.properties.leader;
    const fields = leader.properties.leaseTiming.properties;
    assert.deepEqual(
      {
        leaseDurationMs: durationMs(fields.leaseDuration.default),
        renewDeadlineMs: durationMs(fields.renewDeadline.default),
        retryPeriodMs: durationMs(fields.retryPeriod.default),
      },
      storeLeaseDefaults,
    );
    assert.deepEqual(leaseTimingProblems(storeLeaseDefaults), []);
  });

  it('renders the defaults when absent', () => {
    assert.deepEqual(storeFlags(withTiming(undefined)), [
      '--lease-duration-ms=8000',
      '--renew-deadline-ms=7000',
      '--retry-period-ms=250',
    ]);
  });

  it('renders each field given, the others defaulted', () => {
    const b = withTiming({ leaseDuration: '15s', renewDeadline: '13500ms', retryPeriod: '1s' });
    assert.deepEqual(storeFlags(b), [
      '--lease-duration-ms=15000',
      '--renew-deadline-ms=13500',
      '--retry-period-ms=1000',
    ]);
    assert.deepEqual(leaseTimings(withTiming({ retryPeriod: '500ms' })), {
      ...storeLeaseDefaults,
      retryPeriodMs: 500,
    });
  });

  it('reads durations in ms or s only', () => {
    assert.equal(durationMs('250ms'), 250);
    assert.equal(durationMs('7s'), 7000);
    assert.throws(() => durationMs('1.5s'), /not a duration of the form 250ms or 7s/);
  });
});
