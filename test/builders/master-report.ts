// What the pool controller reads of a master in one pass, for the pool and Binding status decisions.
import type { MasterReport } from '../../src/controllers/pool/status.ts';
import type { TenantFigures } from '../../src/store/tenant-metrics.ts';
import { clientEndpoint } from './pool.ts';

/** Per-tenant figures as tenantFigures() returns them from one scrape. */
export function figures(entries: Record<string, Partial<TenantFigures>>): Map<string, TenantFigures> {
  return new Map(
    Object.entries(entries).map(([tenant, f]) => [tenant, { usageIncludesInFlight: false, ...f }]),
  );
}

/** A master that keeps a ledger, was scraped, and can allocate 900Gi. */
export function report(over: Partial<MasterReport> = {}): MasterReport {
  return {
    ledgerOff: false,
    retained: new Set(),
    figures: figures({}),
    allocatableBytes: 900n * 2n ** 30n,
    clientEndpoint,
    ...over,
  };
}
