// The tenant policy a managed leader loads at start (ConfigMap `<backend>-tenant-quota-policy`): the
// master's whole explicit ledger as this pass leaves it — the Bindings' tenants and everyone else's —
// sorted, as the store's `version: 1` YAML, so a new leader starts with every tenant. Pure.

import type { ConfigMap } from 'kubernetes-types/core/v1.js';
import { parse, stringify } from 'yaml';
import type { KVCacheBackend } from '../../api/types.ts';
import type { KubeObject } from '../../kube/object.ts';
import type { LedgerEntry } from '../../store/tenant-ledger.ts';
import {
  backendLabels,
  backendOwnerReference,
  policyKey,
  seedConfigMapName,
} from '../../vocabulary/store-objects.ts';

export interface SeedInput {
  /** The Bindings' tenants at their ceilings. */
  desired: Map<string, bigint>;
  /**
   * The tenant registry: only a registered tenant is seeded at its Binding's ceiling. A leader started
   * from the seed would otherwise hold a tenant the operator never registered, which it must then
   * take for someone else's.
   */
  registered: Set<string>;
  /** The master's ledger as listed this pass; undefined when it could not be read. */
  listed?: LedgerEntry[];
  /** Tenants this pass deleted from the master. */
  deleted?: Set<string>;
  /** The policy last seeded, which stands for the master's ledger when it could not be read. */
  previous?: Map<string, bigint>;
}

/**
 * Merges, never replaces: every explicit entry the master lists (or, unread, every entry seeded before)
 * stays, with the Bindings' ceilings written over their own tenants and what this pass deleted gone.
 */
export function seedTenants(input: SeedInput): Map<string, bigint> {
  const base = input.listed
    ? new Map(
        input.listed
          .filter((e) => e.explicitPolicy !== false)
          .map((e) => [e.tenant, e.requestedBytes] as const),
      )
    : new Map(input.previous ?? []);
  for (const tenant of input.deleted ?? []) base.delete(tenant);
  for (const [tenant, bytes] of input.desired) if (input.registered.has(tenant)) base.set(tenant, bytes);
  return base;
}

/** The tenants of a seeded policy document; empty when there is none or it cannot be read. */
export function parsePolicy(text: string | undefined): Map<string, bigint> {
  if (!text) return new Map();
  try {
    const doc = parse(text, { intAsBigInt: true }) as { tenants?: { name?: unknown; quota?: unknown }[] };
    return new Map(
      (doc?.tenants ?? []).flatMap((t) =>
        typeof t.name === 'string' && (typeof t.quota === 'bigint' || typeof t.quota === 'number')
          ? [[t.name, BigInt(t.quota)] as const]
          : [],
      ),
    );
  } catch {
    return new Map();
  }
}

export function renderPolicy(tenants: Map<string, bigint>): string {
  const sorted = [...tenants].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return stringify({ version: 1, tenants: sorted.map(([name, quota]) => ({ name, quota })) });
}

export function renderSeedConfigMap(
  backend: KVCacheBackend,
  namespace: string,
  tenants: Map<string, bigint>,
): KubeObject<ConfigMap> {
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: {
      name: seedConfigMapName(backend.metadata.name!),
      namespace,
      labels: backendLabels(backend.metadata.name!, 'tenant-quota-policy'),
      ownerReferences: [{ ...backendOwnerReference(backend), controller: false }],
    },
    data: { [policyKey]: renderPolicy(tenants) },
  };
}
