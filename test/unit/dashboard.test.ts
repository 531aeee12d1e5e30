// The Grafana dashboard's panels read kvpool's own figures under names the operator exports (the
// end-to-end test checks, on a real Prometheus, that each query returns data).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import '../../src/controllers/figure-metrics.ts';
import '../../src/controllers/pool/ledger-metrics.ts';
import '../../src/store/scrape-metrics.ts';
import { registry } from '../../src/kube/metrics.ts';
import { dashboardQueries } from '../support/dashboard.ts';

describe('the Grafana dashboard', () => {
  it('queries only kvpool_* metrics the operator exports', async () => {
    const exported = new Set((await registry.getMetricsAsJSON()).map((m) => m.name));
    const named = dashboardQueries().flatMap((q) =>
      [...q.expr.matchAll(/\bkvpool_[a-z_]+/g)].map((m) => m[0]),
    );
    const base = (n: string) => n.replace(/_(bucket|sum|count)$/, '');
    assert.deepEqual(
      named.filter((n) => !exported.has(base(n))),
      [],
    );
    assert.ok(named.includes('kvpool_binding_pool_prefix_hit_tokens'), 'prompt tokens served from the pool');
  });
});
