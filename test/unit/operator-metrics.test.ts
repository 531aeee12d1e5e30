// The operator's metrics under the names controller-runtime and client-go use, and kvpool's own
// figures taken from status: absent figures give no sample, never a zero.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { PoolPrefix } from '../../src/api/pool-prefix.ts';
import type { ModelDeployment } from '../../src/api/types.ts';
import { figureSamples } from '../../src/controllers/figure-metrics.ts';
import type { LedgerOutcome } from '../../src/controllers/pool/ledger.ts';
import { ledgerPassFailure } from '../../src/controllers/pool/ledger-metrics.ts';
import { Controller } from '../../src/kube/controller.ts';
import { registry } from '../../src/kube/metrics.ts';
import { failedRoutes } from '../../src/store/scrape-metrics.ts';
import { backend, binding, pool } from '../builders/index.ts';
import { ManualClock } from '../support/manual-clock.ts';

/** The value of one sample in the registry's exposition text. */
async function sample(name: string, labels: Record<string, string>): Promise<number | undefined> {
  const text = await registry.metrics();
  const want = Object.entries(labels).map(([k, v]) => `${k}="${v}"`);
  for (const line of text.split('\n')) {
    const m = /^([a-z_:]+)\{([^}]*)\} (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const have = m[2]!.split(',');
    if (want.every((w) => have.includes(w))) return Number(m[3]);
  }
  return undefined;
}

describe('controller-runtime families', () => {
  it('counts reconciles by result, errors, time, and the work queue’s adds, retries and durations', async () => {
    let calls = 0;
    let failed = false;
    const clock = new ManualClock();
    const c = new Controller({
      name: 'metrics-test',
      rateLimits: { baseDelayMs: 1, maxDelayMs: 1 },
      clock,
      reconcile: async (key) => {
        calls++;
        if (key === 'bad' && !failed) {
          failed = true;
          throw new Error('boom');
        }
        return key === 'later' ? { requeueAfterMs: 60_000 } : undefined;
      },
    });
    c.start();
    c.enqueue('good');
    c.enqueue('later');
    c.enqueue('bad');
    await clock.runTo(0);
    assert.equal(calls, 3, 'the failed key waits out its 1 ms backoff');
    await clock.runTo(1);
    assert.equal(calls, 4);
    await c.stop();
    const controller = { controller: 'metrics-test' };
    const queue = { name: 'metrics-test', controller: 'metrics-test' };
    assert.equal(await sample('controller_runtime_reconcile_total', { ...controller, result: 'success' }), 2);
    assert.equal(
      await sample('controller_runtime_reconcile_total', { ...controller, result: 'requeue_after' }),
      1,
    );
    assert.equal(await sample('controller_runtime_reconcile_total', { ...controller, result: 'error' }), 1);
    assert.equal(await sample('controller_runtime_reconcile_errors_total', controller), 1);
    assert.equal(await sample('controller_runtime_reconcile_time_seconds_count', controller), 4);
    assert.equal(await sample('controller_runtime_max_concurrent_reconciles', controller), 1);
    assert.equal(await sample('controller_runtime_active_workers', controller), 0);
    assert.equal(await sample('workqueue_adds_total', queue), 4, 'three keys and one retry');
    assert.equal(await sample('workqueue_retries_total', queue), 1);
    assert.equal(await sample('workqueue_depth', queue), 0);
    assert.equal(await sample('workqueue_queue_duration_seconds_count', queue), 4);
    assert.equal(await sample('workqueue_work_duration_seconds_count', queue), 4);
  });

  it('reports unfinished work while a reconcile runs', async () => {
    let release!: () => void;
    const clock = new ManualClock();
    const c = new Controller({
      name: 'metrics-slow',
      reconcile: () => new Promise((r) => (release = () => r(undefined))),
      clock,
    });
    c.start();
    c.enqueue('slow');
    await clock.runTo(50);
    const queue = { name: 'metrics-slow', controller: 'metrics-slow' };
    assert.equal(await sample('workqueue_longest_running_processor_seconds', queue), 0.05);
    assert.equal(await sample('workqueue_unfinished_work_seconds', queue), 0.05);
    assert.equal(await sample('controller_runtime_active_workers', { controller: 'metrics-slow' }), 1);
    release();
    await c.stop();
  });
});

describe('kvpool figures from status', () => {
  it('gives capacity, grants and usage as bytes, and no sample for a figure the status lacks', () => {
    const b = backend();
    b.status = { phase: 'Ready', capacity: { total: '16Gi', used: '0' } };
    const p = pool('shared-dram', { total: '16Gi', status: { phase: 'Ready', usage: { total: '12' } } });
    const granted = binding('team-a', 'team-a', {
      domain: null,
      status: { phase: 'Ready', effectiveQuota: '6871947674', usage: '12' },
    });
    const unread = binding('team-b', 'team-b', { domain: 'llama-8b-v1', status: { phase: 'Error' } });
    const samples = figureSamples({ backends: [b], pools: [p], bindings: [granted, unread] });
    const value = (metric: string, key: Record<string, string>) =>
      samples.find((s) => s.metric === metric && Object.entries(key).every(([k, v]) => s.labels[k] === v))
        ?.value;
    assert.equal(value('kvpool_backend_capacity_bytes', { backend: 'mooncake-dram' }), 17179869184);
    assert.equal(value('kvpool_backend_used_bytes', { backend: 'mooncake-dram' }), 0);
    assert.equal(value('kvpool_backend_segments', { backend: 'mooncake-dram' }), undefined);
    assert.equal(value('kvpool_pool_usage_bytes', { pool: 'shared-dram' }), 12);
    assert.equal(
      value('kvpool_binding_effective_quota_bytes', { binding: 'team-a', domain: 'default' }),
      6871947674,
    );
    assert.equal(value('kvpool_binding_ceiling_bytes', { binding: 'team-b' }), 8589934592);
    assert.equal(value('kvpool_binding_effective_quota_bytes', { binding: 'team-b' }), undefined);
    assert.equal(value('kvpool_binding_usage_bytes', { binding: 'team-b' }), undefined);
    assert.equal(
      value('kvpool_object_phase', { kind: 'KVCachePoolBinding', name: 'team-b', phase: 'Error' }),
      1,
    );
  });

  it('gives TierWritable as 1 or 0, and no sample while it is Unknown or absent', () => {
    const withTier = (name: string, status?: 'True' | 'False' | 'Unknown') => {
      const b = backend(name);
      b.status = {
        phase: 'Ready',
        ...(status
          ? {
              conditions: [
                {
                  type: 'TierWritable',
                  status,
                  reason: 'R',
                  message: '',
                  lastTransitionTime: '2026-12-02T11:00:00Z',
                },
              ],
            }
          : {}),
      };
      return b;
    };
    const samples = figureSamples({
      backends: [
        withTier('ok', 'True'),
        withTier('full', 'False'),
        withTier('unread', 'Unknown'),
        withTier('none'),
      ],
      pools: [],
      bindings: [],
    }).filter((s) => s.metric === 'kvpool_backend_tier_writable');
    assert.deepEqual(
      samples.map((s) => [s.labels.backend, s.value]),
      [
        ['ok', 1],
        ['full', 0],
      ],
    );
  });

  it('gives the last failover: when, what the members re-registered and how long until warm; nothing before one', () => {
    const warm = backend();
    warm.status = {
      phase: 'Ready',
      lastFailover: {
        at: '2026-12-02T11:00:00.800Z',
        master: '10.0.0.7:9003',
        tierObjectsBefore: 128,
        tierBytesBefore: '32Mi',
        reRegisteredObjects: 128,
        reRegisteredBytes: '32Mi',
        warmAt: '2026-12-02T11:00:02.200Z',
      },
    };
    const value = (samples: ReturnType<typeof figureSamples>, metric: string) =>
      samples.find((s) => s.metric === metric)?.value;
    const samples = figureSamples({ backends: [warm], pools: [], bindings: [] });
    assert.equal(value(samples, 'kvpool_backend_failover_timestamp_seconds'), 1796209200.8);
    assert.equal(value(samples, 'kvpool_backend_failover_reregistered_objects'), 128);
    assert.equal(value(samples, 'kvpool_backend_failover_reregistered_bytes'), 33554432);
    assert.equal(value(samples, 'kvpool_backend_failover_warm_seconds'), 1.4);
    const cold = backend();
    cold.status = {
      phase: 'Ready',
      lastFailover: { at: '2026-12-02T11:00:00.800Z', master: '10.0.0.7:9003' },
    };
    const coldSamples = figureSamples({ backends: [cold], pools: [], bindings: [] });
    assert.equal(value(coldSamples, 'kvpool_backend_failover_timestamp_seconds'), 1796209200.8);
    assert.equal(value(coldSamples, 'kvpool_backend_failover_reregistered_objects'), undefined);
    assert.equal(value(coldSamples, 'kvpool_backend_failover_warm_seconds'), undefined);
    const never = figureSamples({ backends: [backend()], pools: [], bindings: [] });
    assert.ok(!never.some((s) => s.metric.startsWith('kvpool_backend_failover_')));
  });

  it('gives the memory figures of the last failover and the replication of the index; absent is no sample', () => {
    const replicated = backend();
    replicated.status = {
      phase: 'Ready',
      conditions: [
        {
          type: 'MetadataReplicated',
          status: 'True',
          reason: 'Following',
          message: '',
          lastTransitionTime: '2026-12-02T11:00:00Z',
        },
      ],
      lastFailover: {
        at: '2026-12-02T11:00:00.800Z',
        master: '10.0.0.7:9003',
        dramKeysBefore: 200,
        dramBytesBefore: '25Mi',
        dramKeysAfter: 200,
        dramBytesAfter: '25Mi',
      },
      replication: { standbys: 2, following: 2, lagEntries: 0, etcdMembers: 3, etcdHealthy: 2 },
    };
    const got = Object.fromEntries(
      figureSamples({ backends: [replicated], pools: [], bindings: [] }).map((s) => [s.metric, s.value]),
    );
    assert.equal(got.kvpool_backend_failover_dram_keys_before, 200);
    assert.equal(got.kvpool_backend_failover_dram_keys_after, 200);
    assert.equal(got.kvpool_backend_metadata_replicated, 1);
    assert.equal(got.kvpool_backend_oplog_lag_entries, 0);
    assert.equal(got.kvpool_backend_etcd_members, 3);
    assert.equal(got.kvpool_backend_etcd_healthy_members, 2);
    const plain = figureSamples({ backends: [backend()], pools: [], bindings: [] });
    assert.ok(!plain.some((s) => /oplog|etcd|replicated/.test(s.metric)), 'no sample without replication');
  });

  it('gives the prompt tokens served from the pool per ModelDeployment and per Binding, absent when not reported', () => {
    const served = binding('team-a', 'team-a', {
      domain: null,
      status: { phase: 'Ready', poolPrefix: { hitTokens: 768, queriedTokens: 1536, hitRatio: '0.5' } },
    });
    const deployment = (name: string, poolPrefix?: PoolPrefix): ModelDeployment => ({
      apiVersion: 'worker.gpustack.ai/v1',
      kind: 'ModelDeployment',
      metadata: { name, namespace: 'team-a' },
      spec: {
        model: { name: 'Qwen/Qwen2.5-7B-Instruct' },
        engine: { name: 'vLLM' },
        kvCache: { poolRef: { name: 'team-a' } },
        roles: [{ name: 'server', instanceType: 'local-gpu' }],
      },
      ...(poolPrefix ? { status: { poolPrefix } } : {}),
    });
    const samples = figureSamples({
      backends: [],
      pools: [],
      bindings: [served],
      deployments: [deployment('chat', { hitTokens: 64 }), deployment('idle')],
    });
    const value = (metric: string, name: string) =>
      samples.find((s) => s.metric === metric && (s.labels.modeldeployment ?? s.labels.binding) === name)
        ?.value;
    assert.equal(value('kvpool_binding_pool_prefix_hit_tokens', 'team-a'), 768);
    assert.equal(value('kvpool_binding_pool_prefix_queried_tokens', 'team-a'), 1536);
    assert.equal(value('kvpool_binding_pool_prefix_hit_ratio', 'team-a'), 0.5);
    assert.equal(value('kvpool_modeldeployment_pool_prefix_hit_tokens', 'chat'), 64);
    assert.equal(value('kvpool_modeldeployment_pool_prefix_hit_ratio', 'chat'), undefined);
    assert.equal(value('kvpool_modeldeployment_pool_prefix_hit_tokens', 'idle'), undefined);
    const chat = samples.find((s) => s.labels.modeldeployment === 'chat');
    assert.deepEqual(chat?.labels, { namespace: 'team-a', modeldeployment: 'chat', binding: 'team-a' });
  });

  it('names why a ledger pass did not converge, and which admin routes a scrape failed', () => {
    const outcome = (over: Partial<LedgerOutcome>): LedgerOutcome => ({
      plan: undefined as never,
      ledgerOff: false,
      putFailures: new Map(),
      retained: new Set(),
      deleteFailures: new Map(),
      deleted: new Set(),
      purged: new Map(),
      purgeRefused: new Map(),
      registered: new Set(),
      wrote: false,
      ...over,
    });
    assert.equal(ledgerPassFailure(outcome({})), undefined);
    assert.equal(
      ledgerPassFailure(outcome({ failure: { kind: 'LedgerUnreachable', message: 'refused' } })),
      'LedgerUnreachable',
    );
    assert.equal(
      ledgerPassFailure(
        outcome({ deleteFailures: new Map([['d', { kind: 'TenantNotEmpty' as const, message: 'x' }]]) }),
      ),
      'TenantNotEmpty',
    );
    const ok = { ok: true as const, value: undefined as never };
    const bad = { ok: false as const, reason: 'ScrapeFailed', message: 'timeout' };
    assert.deepEqual(failedRoutes({ address: 'a', at: 0, health: bad }), ['health']);
    assert.deepEqual(failedRoutes({ address: 'a', at: 0, health: ok, metrics: bad, segments: ok }), [
      'metrics',
    ]);
  });
});
