// Prometheus metrics of the operator process, served on /metrics. The runtime's families carry the
// names and labels controller-runtime and client-go give them, so the dashboards and alerts written
// for Go operators read this one unchanged; process_* and nodejs_* come from prom-client.
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';

export const registry = new Registry();
collectDefaultMetrics({ register: registry });

// controller-runtime's reconcile-time buckets (also client-go's REST latency buckets).
const latencyBuckets = [
  0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.25,
  1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5, 6, 7, 8, 9, 10, 15, 20, 25, 30, 40, 50, 60,
];
// The work queue's: 10ns to 1000s, ten per step.
const queueBuckets = Array.from({ length: 12 }, (_, i) => 1e-8 * 10 ** i);

export const reconcileTotal = new Counter({
  name: 'controller_runtime_reconcile_total',
  help: 'Total number of reconciliations per controller',
  labelNames: ['controller', 'result'] as const,
  registers: [registry],
});

export const reconcileErrors = new Counter({
  name: 'controller_runtime_reconcile_errors_total',
  help: 'Total number of reconciliation errors per controller',
  labelNames: ['controller'] as const,
  registers: [registry],
});

export const reconcileTime = new Histogram({
  name: 'controller_runtime_reconcile_time_seconds',
  help: 'Length of time per reconciliation per controller',
  labelNames: ['controller'] as const,
  buckets: latencyBuckets,
  registers: [registry],
});

export const maxConcurrentReconciles = new Gauge({
  name: 'controller_runtime_max_concurrent_reconciles',
  help: 'Maximum number of concurrent reconciles per controller',
  labelNames: ['controller'] as const,
  registers: [registry],
});

export const activeWorkers = new Gauge({
  name: 'controller_runtime_active_workers',
  help: 'Number of currently used workers per controller',
  labelNames: ['controller'] as const,
  registers: [registry],
});

const queueLabels = ['name', 'controller'] as const;

export const workqueueDepth = new Gauge({
  name: 'workqueue_depth',
  help: 'Current depth of workqueue',
  labelNames: queueLabels,
  registers: [registry],
});

export const workqueueAdds = new Counter({
  name: 'workqueue_adds_total',
  help: 'Total number of adds handled by workqueue',
  labelNames: queueLabels,
  registers: [registry],
});

export const workqueueQueueDuration = new Histogram({
  name: 'workqueue_queue_duration_seconds',
  help: 'How long in seconds an item stays in workqueue before being requested',
  labelNames: queueLabels,
  buckets: queueBuckets,
  registers: [registry],
});

export const workqueueWorkDuration = new Histogram({
  name: 'workqueue_work_duration_seconds',
  help: 'How long in seconds processing an item from workqueue takes.',
  labelNames: queueLabels,
  buckets: queueBuckets,
  registers: [registry],
});

export const workqueueRetries = new Counter({
  name: 'workqueue_retries_total',
  help: 'Total number of retries handled by workqueue',
  labelNames: queueLabels,
  registers: [registry],
});

/** What a queue reports at scrape time about the keys it is processing. */
export interface InFlightWork {
  readonly name: string;
  /** Seconds each key being processed has run so far. */
  runningSeconds(): number[];
}

const inFlight = new Set<InFlightWork>();

/** Registers a queue whose in-flight work the two gauges below read at each scrape; returns its release. */
export function trackInFlightWork(queue: InFlightWork): () => void {
  inFlight.add(queue);
  return () => inFlight.delete(queue);
}

export const workqueueUnfinishedWork = new Gauge({
  name: 'workqueue_unfinished_work_seconds',
  help: "How many seconds of work has been done that is in progress and hasn't been observed by work_duration. Large values indicate stuck threads.",
  labelNames: queueLabels,
  registers: [registry],
  collect() {
    for (const q of inFlight)
      this.set(
        { name: q.name, controller: q.name },
        q.runningSeconds().reduce((a, b) => a + b, 0),
      );
  },
});

export const workqueueLongestRunning = new Gauge({
  name: 'workqueue_longest_running_processor_seconds',
  help: 'How many seconds has the longest running processor for workqueue been running.',
  labelNames: queueLabels,
  registers: [registry],
  collect() {
    for (const q of inFlight)
      this.set({ name: q.name, controller: q.name }, Math.max(0, ...q.runningSeconds()));
  },
});

export const restClientRequests = new Counter({
  name: 'rest_client_requests_total',
  help: 'Number of HTTP requests, partitioned by status code, method, and host.',
  labelNames: ['code', 'method', 'host'] as const,
  registers: [registry],
});

export const restClientRequestDuration = new Histogram({
  name: 'rest_client_request_duration_seconds',
  help: 'Request latency in seconds. Broken down by verb and host.',
  labelNames: ['verb', 'host'] as const,
  buckets: latencyBuckets,
  registers: [registry],
});

export const leaderElectionStatus = new Gauge({
  name: 'leader_election_master_status',
  help: "Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 indicates master. 'name' is the string used to identify the lease. Please make sure to group by name.",
  labelNames: ['name'] as const,
  registers: [registry],
});

export const webhookRequests = new Counter({
  name: 'controller_runtime_webhook_requests_total',
  help: 'Total number of admission requests by HTTP status code.',
  labelNames: ['webhook', 'code'] as const,
  registers: [registry],
});

export const webhookLatency = new Histogram({
  name: 'controller_runtime_webhook_latency_seconds',
  help: 'Histogram of the latency of processing admission requests',
  labelNames: ['webhook', 'code'] as const,
  // The default buckets start at 5 ms; an admission answer takes well under one.
  buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
  registers: [registry],
});

export const webhookInFlight = new Gauge({
  name: 'controller_runtime_webhook_requests_in_flight',
  help: 'Current number of admission requests being served.',
  labelNames: ['webhook'] as const,
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
