// What the operator's own /metrics say happened between two scrapes: how many passes, how long they
// waited in the queue and ran, each stage of a pool pass, and its requests to the apiserver.
import type { Families, Sample } from '../src/store/prometheus.ts';
import { round } from './results.ts';

type Labels = Record<string, string>;

const matches = (s: Sample, labels: Labels) => Object.entries(labels).every(([k, v]) => s.labels[k] === v);

function total(f: Families, name: string, labels: Labels): number {
  return (f.get(name) ?? []).filter((s) => matches(s, labels)).reduce((a, s) => a + s.value, 0);
}

/** A histogram's observations between two scrapes: how many, their mean, and the bucket holding the p99. */
export function histogramSince(before: Families, after: Families, name: string, labels: Labels) {
  const n = total(after, `${name}_count`, labels) - total(before, `${name}_count`, labels);
  const sum = total(after, `${name}_sum`, labels) - total(before, `${name}_sum`, labels);
  if (n === 0) return { n: 0 };
  const buckets = new Map<number, number>();
  for (const [f, sign] of [
    [after, 1],
    [before, -1],
  ] as const) {
    for (const s of (f.get(`${name}_bucket`) ?? []).filter((x) => matches(x, labels))) {
      const le = Number(s.labels.le === '+Inf' ? Number.POSITIVE_INFINITY : s.labels.le);
      buckets.set(le, (buckets.get(le) ?? 0) + sign * s.value);
    }
  }
  // Buckets are cumulative: the p99 lies at or below the first bound holding 99% of the observations.
  const bound = [...buckets].sort(([a], [b]) => a - b).find(([, count]) => count >= 0.99 * n)?.[0];
  return {
    n,
    meanMs: round((sum / n) * 1000, 1),
    p99AtMostMs: bound === undefined || bound === Number.POSITIVE_INFINITY ? undefined : bound * 1000,
  };
}

/** The values one label takes in a family. */
function labelValues(f: Families, name: string, label: string, labels: Labels): string[] {
  return [
    ...new Set((f.get(name) ?? []).filter((s) => matches(s, labels)).flatMap((s) => s.labels[label] ?? [])),
  ];
}

/** Where the pool controller's time went between two scrapes of the operator's metrics. */
export function poolPassFigures(before: Families, after: Families) {
  const controller = { controller: 'kvcachepool' };
  const stages = Object.fromEntries(
    labelValues(after, 'kvpool_pool_pass_stage_seconds_count', 'stage', {}).map((stage) => [
      stage,
      histogramSince(before, after, 'kvpool_pool_pass_stage_seconds', { stage }),
    ]),
  );
  const verbs = Object.fromEntries(
    labelValues(after, 'rest_client_request_duration_seconds_count', 'verb', {})
      .filter((v) => v !== 'WATCH')
      .map((verb) => [verb, histogramSince(before, after, 'rest_client_request_duration_seconds', { verb })]),
  );
  return {
    queueWait: histogramSince(before, after, 'workqueue_queue_duration_seconds', controller),
    pass: histogramSince(before, after, 'controller_runtime_reconcile_time_seconds', controller),
    ledger: histogramSince(before, after, 'kvpool_ledger_pass_duration_seconds', {}),
    stages,
    apiserverRequests: verbs,
  };
}
