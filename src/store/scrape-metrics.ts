// Reads of a store's admin routes that failed, per backend and route, as the operator's watcher polls it.
import { Counter } from 'prom-client';
import { registry } from '../kube/metrics.ts';
import type { StoreObservation } from './observe.ts';

export const storeScrapeFailures = new Counter({
  name: 'kvpool_store_scrape_failures_total',
  help: "Failed reads of a store master's admin routes (health, metrics, segments) by the operator, per backend.",
  labelNames: ['backend', 'route'] as const,
  registers: [registry],
});

/** The routes of one observation that failed. Pure. */
export function failedRoutes(o: StoreObservation): string[] {
  if (!o.health.ok) return ['health'];
  return [
    ...(o.metrics && !o.metrics.ok ? ['metrics'] : []),
    ...(o.segments && !o.segments.ok ? ['segments'] : []),
  ];
}

/** Counts an observation's failures against each backend that watches this master. */
export function countScrapeFailures(backends: string[], o: StoreObservation): void {
  const failed = failedRoutes(o);
  for (const backend of backends) {
    for (const route of ['health', 'metrics', 'segments'])
      storeScrapeFailures.inc({ backend, route }, failed.includes(route) ? 1 : 0);
  }
}
