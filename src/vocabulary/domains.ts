// Reuse domains: the tenant a Binding's workloads share on the store's ledger.
import type { KVCachePoolBinding } from '../api/types.ts';

/** The Binding's domain: its name, or `default` when it names none. */
export function domainOf(b: KVCachePoolBinding): string {
  return b.spec.domain.name ?? 'default';
}
