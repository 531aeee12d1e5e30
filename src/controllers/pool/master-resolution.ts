// Where a pool's master answers: the backend named, its published endpoints, and for a managed store
// the ready leader holding the Lease. What is missing is written into the pass's report.
import { PoolReason } from '../../api/kvcache-pool-conditions.ts';
import type { KVCacheBackend } from '../../api/types.ts';
import type { PoolInformers } from '../../operator-io/informers.ts';
import { externalAdminAddress, leaseHolder, managedAdminAddress } from '../../operator-io/master-address.ts';
import type { MasterReport } from './status.ts';

/** Fills how the pool's backend resolves; returns the master's admin address when there is one. */
export function resolveMaster(
  informers: PoolInformers,
  namespace: string,
  key: string,
  backend: KVCacheBackend | undefined,
  report: MasterReport,
): string | undefined {
  if (!backend) {
    report.unresolved = {
      reason: PoolReason.BackendNotFound,
      message: `KVCacheBackend ${key} does not exist; create it, or delete this pool`,
    };
    return undefined;
  }
  report.clientEndpoint = backend.status?.endpoints?.find((e) => e.name === 'Client')?.address;
  const published = backend.status?.endpoints?.some((e) => e.name === 'Admin');
  if (!published) {
    report.unresolved = {
      reason: PoolReason.EndpointsNotPublished,
      message: `backend ${key} has published no Admin endpoint yet`,
    };
    return undefined;
  }
  if (backend.spec.connection.managed?.leader.multiTenancy === false) report.ledgerOff = true;
  const managed = Boolean(backend.spec.connection.managed);
  const address = managed
    ? managedAdminAddress(informers, backend, leaseHolder(informers, backend, namespace))
    : externalAdminAddress(backend);
  if (!address && !report.ledgerOff)
    report.ledgerFailure = {
      kind: PoolReason.LedgerUnreachable,
      message: `no leader of backend ${key} is ready to answer`,
    };
  return address;
}
