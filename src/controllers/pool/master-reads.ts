// What a pool pass reads besides its caches: the backend's tenant registry and the ledger objects whose
// names someone else holds, the master's figures for the statuses, and the disk-tier evidence a purge
// is refused on.
import type { KVCacheBackend } from '../../api/types.ts';
import { claimLiveChild } from '../../operator-io/apply.ts';
import type { PoolInformers } from '../../operator-io/informers.ts';
import type { OperatorContext } from '../../operator-io/operator-context.ts';
import { gaugeBytes } from '../../store/prometheus.ts';
import { allocatableBytes, tenantFigures } from '../../store/tenant-metrics.ts';
import { type ChildConflict, claimChild } from '../../vocabulary/child-ownership.ts';
import { seedConfigMapName } from '../../vocabulary/store-objects.ts';
import { diskTierEvidence } from './purge-safety.ts';
import { renderSeedConfigMap } from './seed-policy.ts';
import type { MasterReport } from './status.ts';
import { type RegistryVersions, registryConfigMapName } from './tenant-registry.ts';

/**
 * The backend's tenant registry (at the version last read live or written), and the registry or policy ConfigMaps whose names an
 * object the backend does not own holds (their content is not this operator's to read or write).
 */
export async function ledgerObjects(
  ctx: OperatorContext,
  informers: PoolInformers,
  registries: RegistryVersions,
  backend: KVCacheBackend,
) {
  const { client, namespace } = ctx;
  const name = backend.metadata.name!;
  const uid = backend.metadata.uid;
  const conflicts: ChildConflict[] = [];
  const cached = informers.registries.get(registryConfigMapName(name), namespace);
  const live = await registries.current(client, namespace, name, cached);
  const registry = claimChild(live, uid, { coOwned: true });
  if (registry.kind === 'foreign') conflicts.push(registry.conflict);
  if (backend.spec.connection.managed) {
    const seed = renderSeedConfigMap(backend, namespace, new Map());
    const cached = informers.policies.get(seedConfigMapName(name), namespace);
    const { conflict } = await claimLiveChild(client, seed, cached, uid, { coOwned: true });
    if (conflict) conflicts.push(conflict);
  }
  return { live: registry.kind === 'ours' ? live : undefined, conflicts };
}

/** What shows the store has a disk tier, from its spec and a scrape taken just before a purge. */
export async function purgeHazard(
  ctx: OperatorContext,
  key: string,
  backend: KVCacheBackend,
  address: string,
) {
  const declared = diskTierEvidence(backend, new Map());
  if (declared) return declared;
  const o = await ctx.store.refresh(address, `pool/${key}`);
  if (!o.metrics?.ok)
    throw new Error(
      `the master's metrics, read before removing a domain's objects, failed: ${o.metrics?.message ?? 'not read'}`,
    );
  return diskTierEvidence(backend, o.metrics.value);
}

/** One scrape per master per pass: fresh after a ledger write, else the watcher's latest. */
export async function readBack(
  ctx: OperatorContext,
  key: string,
  address: string | undefined,
  report: MasterReport,
  wrote: boolean,
) {
  if (!address) return;
  const me = `pool/${key}`;
  const o = wrote
    ? await ctx.store.refresh(address, me)
    : (ctx.store.latest(address) ?? (await ctx.store.refresh(address, me)));
  if (!o.metrics?.ok) return;
  report.figures = tenantFigures(o.metrics.value);
  report.allocatableBytes = report.ledgerOff
    ? gaugeBytes(o.metrics.value, 'master_total_capacity_bytes')
    : allocatableBytes(o.metrics.value);
}
