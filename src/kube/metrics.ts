// Prometheus metrics of the operator itself, served on /metrics.
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';

export const registry = new Registry();
collectDefaultMetrics({ register: registry, prefix: 'kvpool_process_' });

export const reconcileTotal = new Counter({
  name: 'kvpool_reconcile_total',
  help: 'Reconciles by controller and result (success, error, requeue).',
  labelNames: ['controller', 'result'] as const,
  registers: [registry],
});

export const reconcileDuration = new Histogram({
  name: 'kvpool_reconcile_duration_seconds',
  help: 'Reconcile duration by controller.',
  labelNames: ['controller'] as const,
  buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
  registers: [registry],
});

export const queueDepth = new Gauge({
  name: 'kvpool_workqueue_depth',
  help: 'Keys waiting in a controller work queue.',
  labelNames: ['controller'] as const,
  registers: [registry],
});

export const watchRestarts = new Counter({
  name: 'kvpool_watch_restarts_total',
  help: 'Watch streams restarted after an error, by kind.',
  labelNames: ['kind'] as const,
  registers: [registry],
});

export const apiWrites = new Counter({
  name: 'kvpool_api_writes_total',
  help: 'Write requests (POST, PUT, PATCH, DELETE) sent to the API server, by verb.',
  labelNames: ['verb'] as const,
  registers: [registry],
});

export const leaderGauge = new Gauge({
  name: 'kvpool_leader',
  help: '1 while this replica holds the operator Lease.',
  registers: [registry],
});
