// Where a backend's master answers: the ready leader behind its admin Service (the Lease holder while a
// failover briefly shows two), or the Admin endpoint an external backend names. Read by the backend
// controller, which reports on the master, and the pool controller, which keeps its ledger.
import type { KVCacheBackend } from '../api/types.ts';
import { adminServiceName, leaderAdminPort, leaderName } from '../vocabulary/store-objects.ts';
import { type BackendInformers, byService } from './informers.ts';

/** host:port of the managed leader's admin endpoint: a ready leader Pod behind the admin Service. */
export function managedAdminAddress(
  informers: BackendInformers,
  backend: KVCacheBackend,
  holder?: string,
): string | undefined {
  const ready: string[] = [];
  for (const slice of informers.slices.byIndex(byService, adminServiceName(backend))) {
    const port = slice.ports?.find((p) => p.name === 'admin')?.port ?? leaderAdminPort;
    for (const e of slice.endpoints ?? []) {
      if (e.conditions?.ready && e.addresses[0]) ready.push(`${e.addresses[0]}:${port}`);
    }
  }
  ready.sort();
  // While a failover briefly shows two ready replicas, the Lease holder is the one serving.
  const holderHost = holder?.split(':')[0];
  return ready.find((a) => a.split(':')[0] === holderHost) ?? ready[0];
}

export function externalAdminAddress(backend: KVCacheBackend): string | undefined {
  return backend.spec.connection.external?.endpoints.find((e) => e.name === 'Admin')?.address;
}

export function leaseHolder(
  informers: BackendInformers,
  backend: KVCacheBackend,
  namespace: string,
): string | undefined {
  return informers.leases.get(leaderName(backend), namespace)?.spec?.holderIdentity || undefined;
}
