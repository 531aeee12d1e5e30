// Admission rules for KVCachePool and KVCachePoolBinding that need other objects (KV-cache spec §3.2,
// §3.3). Pure: the handler passes what the caches hold.

import { formatQuantity } from '../api/readable-quantity.ts';
import type { KVCacheBackend, KVCachePool, KVCachePoolBinding } from '../api/types.ts';
import { domainOf } from '../model/domains.ts';
import { parseQuantityBytes } from '../model/quantity.ts';
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
  /** Every other Binding whose pool is served by the same backend. */
  siblings: KVCachePoolBinding[];
  /** The pool's last observed QuotaLedgerAvailable reason, if any. */
  ledgerReason?: string;
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
  const holder = ctx.siblings.find((s) => domainOf(s) === domain);
  if (holder) {
    return [
      `spec.domain.name: domain "${domain}" is already registered on backend ${backend} by KVCachePoolBinding ${holder.metadata.namespace}/${holder.metadata.name} (an omitted name is "default"); give this Binding a unique domain.name`,
    ];
  }
  const others = [...new Set(ctx.siblings.map(domainOf))];
  if (others.length === 0) return [];
  const ledgerOff =
    ctx.backend!.spec.connection.managed?.leader.multiTenancy === false ||
    ctx.ledgerReason === 'MultiTenancyDisabled';
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
