// Admission rules for KVCachePool and KVCachePoolBinding that need other objects
// (docs/decisions/0007-one-ledger-pass-per-master.md). Pure: the handler passes what the caches hold.

import type { ReasonOf } from '../api/condition-table.ts';
import { type PoolCondition, PoolReason, type poolConditions } from '../api/kvcache-pool-conditions.ts';
import type { KVCacheBackend, KVCachePool, KVCachePoolBinding } from '../api/types.ts';
import { formatQuantity } from '../kube/readable-quantity.ts';
import type { ClaimVerdict } from '../vocabulary/domain-claims.ts';
import { domainOf } from '../vocabulary/domains.ts';
import { parseQuantityBytes } from '../vocabulary/quantity.ts';
import type { AdmissionFindings } from './findings.ts';

const ledgerOffWarning = (backend: string) =>
  `backend "${backend}" runs without multi-tenancy: it holds no tenant ledger, so no per-tenant quota is in force and a pool on it serves exactly one reuse domain`;

export function validatePoolCreate(
  pool: KVCachePool,
  backend: KVCacheBackend | undefined,
): AdmissionFindings {
  const name = pool.spec.backends[0]!;
  if (!backend) {
    return {
      errors: [
        `spec.backends[0]: KVCacheBackend "${name}" does not exist; create the backend first (a pool names exactly one existing backend)`,
      ],
      warnings: [],
    };
  }
  const off = backend.spec.connection.managed?.leader.multiTenancy === false;
  return { errors: [], warnings: off ? [ledgerOffWarning(name)] : [] };
}

export interface BindingContext {
  pool?: KVCachePool;
  backend?: KVCacheBackend;
  /** Domains other Bindings on the same backend hold (from the cache; the claim decides uniqueness). */
  otherDomains: string[];
  /** The pool's last observed QuotaLedgerAvailable reason, if any. */
  ledgerReason?: ReasonOf<typeof poolConditions, typeof PoolCondition.QuotaLedgerAvailable>;
  dtypeOwned: boolean;
}

export function validateBinding(
  b: KVCachePoolBinding,
  old: KVCachePoolBinding | undefined,
  ctx: BindingContext,
): AdmissionFindings {
  const errors: string[] = [];
  const warnings: string[] = [];
  if (!old && ctx.dtypeOwned && b.spec.domain.dtype === 'auto') {
    errors.push(
      'spec.domain.dtype: auto is refused because the operator renders this dtype as --kv-cache-dtype and engines resolve auto differently; write the dtype the deployments run, for example bfloat16',
    );
  }
  const ceilingMoved = !old || String(old.spec.quota.ceiling) !== String(b.spec.quota.ceiling);
  if (ctx.pool && ceilingMoved) {
    const ceiling = parseQuantityBytes(b.spec.quota.ceiling);
    const total = parseQuantityBytes(ctx.pool.spec.quota.total);
    if (ceiling > total) {
      errors.push(
        `spec.quota.ceiling: ${formatQuantity(ceiling)} is more than pool ${ctx.pool.metadata.name}'s quota.total of ${formatQuantity(total)}; lower the ceiling or raise the pool's total`,
      );
    }
  }
  if (!old && !ctx.pool) {
    warnings.push(
      `KVCachePool "${b.spec.poolRef.name}" does not exist yet: the Binding grants nothing until it does`,
    );
  }
  if (!old && ctx.backend) errors.push(...domainRefusals(b, ctx, warnings));
  return { errors, warnings };
}

function domainRefusals(b: KVCachePoolBinding, ctx: BindingContext, warnings: string[]): string[] {
  const domain = domainOf(b);
  const backend = ctx.backend!.metadata.name!;
  const others = ctx.otherDomains.filter((d) => d !== domain);
  if (others.length === 0) return [];
  const ledgerOff =
    ctx.backend!.spec.connection.managed?.leader.multiTenancy === false ||
    ctx.ledgerReason === PoolReason.MultiTenancyDisabled;
  if (ledgerOff) {
    return [
      `spec.domain.name: backend ${backend} holds no tenant ledger, so it serves exactly one reuse domain (${others.join(', ')}); use that domain, or a backend with leader.multiTenancy: true`,
    ];
  }
  warnings.push(
    `domain "${domain}" is a second reuse domain on backend ${backend}: engines must pass the injected tenant (vLLM reads tenant_id from the client config, SGLang MOONCAKE_TENANT_ID); older engines write to "default" and are refused`,
  );
  return [];
}

/** Why a created Binding may not have its domain, from its claim's verdict; undefined when it may. */
export function claimRefusal(
  b: KVCachePoolBinding,
  backend: string,
  verdict: ClaimVerdict,
  graceMs: number,
): string | undefined {
  const domain = domainOf(b);
  const field = `spec.domain.name: domain "${domain}"`;
  switch (verdict.kind) {
    case 'ours':
    case 'takeOver':
      return undefined;
    case 'held': {
      // Another namespace's Binding is not named: its namespace and name are not this tenant's to read.
      const by =
        verdict.holder.namespace === b.metadata.namespace
          ? `on backend ${backend} by KVCachePoolBinding ${verdict.holder.namespace}/${verdict.holder.name}`
          : `on this store (backend ${backend}) by another namespace`;
      return `${field} is already claimed ${by} (an omitted name is "default"); choose another spec.domain.name`;
    }
    case 'pending':
      return `${field} is already claimed on this store (backend ${backend}) by a Binding being created at the same time, not yet stored; if that create failed, the claim lapses ${Math.ceil(graceMs / 1000)} s after it was made (in at most ${Math.ceil(verdict.lapsesInMs / 1000)} s): retry then, or choose another spec.domain.name`;
    case 'foreign':
      return `${field} cannot be claimed on backend ${backend}: a Lease that kvpool did not make holds the name of its claim in the operator's namespace; remove that Lease, or choose another spec.domain.name`;
  }
}
