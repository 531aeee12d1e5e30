// Per-tenant figures from one /metrics scrape. The usage family changed name between store versions:
// 0.3.13 reports bytes charged at write start (`_charged_bytes`), 0.3.12.post1 committed bytes (`_used_bytes`).
import { byLabel, byLabelBytes, type Families, gaugeBytes } from './prometheus.ts';

export interface TenantFigures {
  requestedBytes?: bigint;
  effectiveBytes?: bigint;
  usageBytes?: bigint;
  /** The usage figure includes writes still in flight (0.3.13's charged-at-start shape). */
  usageIncludesInFlight: boolean;
  overQuota?: boolean;
  explicitPolicy?: boolean;
}

const family = (suffix: string) => `mooncake_tenant_quota_${suffix}`;

export function tenantFigures(families: Families): Map<string, TenantFigures> {
  const requested = byLabelBytes(families, family('requested_bytes'), 'tenant_id');
  const effective = byLabelBytes(families, family('effective_bytes'), 'tenant_id');
  const charged = byLabelBytes(families, family('charged_bytes'), 'tenant_id');
  const used = byLabelBytes(families, family('used_bytes'), 'tenant_id');
  const over = byLabel(families, family('over_quota'), 'tenant_id');
  const explicit = byLabel(families, family('explicit_policy'), 'tenant_id');
  const tenants = new Set([...requested.keys(), ...effective.keys(), ...charged.keys(), ...used.keys()]);
  const out = new Map<string, TenantFigures>();
  for (const t of tenants) {
    out.set(t, {
      requestedBytes: requested.get(t),
      effectiveBytes: effective.get(t),
      usageBytes: charged.get(t) ?? used.get(t),
      usageIncludesInFlight: charged.has(t),
      overQuota: over.has(t) ? over.get(t) !== 0 : undefined,
      explicitPolicy: explicit.has(t) ? explicit.get(t) !== 0 : undefined,
    });
  }
  return out;
}

/** What the master can hand out to tenants at all; undefined when not reported. */
export function allocatableBytes(families: Families): bigint | undefined {
  return gaugeBytes(families, family('allocatable_capacity_bytes'));
}
