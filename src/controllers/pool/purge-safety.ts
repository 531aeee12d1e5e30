// Whether removing one domain's objects from a store stays within that domain (decision 32). Pure.
// The master's per-tenant removal (0.3.13) asks every member holding a disk-tier copy of one of the
// tenant's objects to empty its whole tier directory, other tenants' files included.

import type { KVCacheBackend } from '../../api/types.ts';
import { formatQuantity } from '../../kube/readable-quantity.ts';
import { type Families, gaugeBytes } from '../../store/prometheus.ts';
import { anyDiskTier } from '../../vocabulary/backend-spec.ts';

/** What shows the store has a disk tier, or undefined when neither its spec nor its master does. */
export function diskTierEvidence(backend: KVCacheBackend, families: Families): string | undefined {
  if (backend.spec.connection.managed && anyDiskTier(backend)) return 'a member group declares localDisks';
  const capacity = gaugeBytes(families, 'master_total_file_capacity_bytes') ?? 0n;
  const held = gaugeBytes(families, 'master_allocated_file_size_bytes') ?? 0n;
  if (capacity > 0n || held > 0n)
    return `its master reports ${formatQuantity(held)} held on a disk tier of ${formatQuantity(capacity)}`;
  return undefined;
}
