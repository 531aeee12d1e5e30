// The master's tenant-quota ledger through its admin API (/api/v1/tenant_quotas): list, set a
// tenant's requested bytes, delete a tenant; and remove one tenant's objects (/api/v1/remove_all).
// Failures are classified the way pool conditions name them.
import { PoolReason } from '../api/kvcache-pool-conditions.ts';
import {
  type AdminRequestOptions,
  adminTimeoutMs,
  failure,
  StoreAdminClient,
  StoreRequestFailed,
  StoreUnreachable,
} from './admin-client.ts';

export interface LedgerEntry {
  tenant: string;
  requestedBytes: bigint;
  effectiveBytes?: bigint;
  chargedBytes?: bigint;
  overQuota?: boolean;
  /** Undefined when the master does not say; such an entry is never taken for this operator's. */
  explicitPolicy?: boolean;
}

/** Why a ledger request failed, in the pool's reason vocabulary. */
export type LedgerFailure =
  | { kind: typeof PoolReason.MultiTenancyDisabled; message: string }
  | { kind: typeof PoolReason.QuotaPolicyNotWritable; message: string }
  | { kind: 'TenantNotEmpty'; message: string }
  | { kind: typeof PoolReason.LedgerUnreachable; message: string };

/** Mooncake error codes the operator reads (mooncake-store types). */
const unavailableInCurrentMode = -1011;
const tenantNotEmpty = -1702;

export class LedgerError extends Error {
  readonly failure: LedgerFailure;
  constructor(failure: LedgerFailure) {
    super(failure.message);
    this.name = 'LedgerError';
    this.failure = failure;
  }
}

export function classifyLedgerError(err: unknown): LedgerFailure {
  if (err instanceof StoreRequestFailed) {
    if (err.errorCode === unavailableInCurrentMode && err.status === 409) {
      return {
        kind: PoolReason.MultiTenancyDisabled,
        message: 'the master runs without multi-tenancy (UNAVAILABLE_IN_CURRENT_MODE)',
      };
    }
    if (err.errorCode === tenantNotEmpty)
      return {
        kind: 'TenantNotEmpty',
        message: 'the master refuses to drop a tenant that still holds data (TENANT_NOT_EMPTY)',
      };
    if (/persist|write|save|policy/i.test(err.errorMessage ?? '')) {
      return {
        kind: PoolReason.QuotaPolicyNotWritable,
        message: `the master could not persist its tenant policy: ${err.message}`,
      };
    }
    return { kind: PoolReason.LedgerUnreachable, message: err.message };
  }
  if (err instanceof StoreUnreachable) return { kind: PoolReason.LedgerUnreachable, message: err.message };
  return { kind: PoolReason.LedgerUnreachable, message: err instanceof Error ? err.message : String(err) };
}

interface WireEntry {
  tenant_id: string;
  requested_quota_bytes: number | bigint;
  effective_quota_bytes?: number | bigint;
  charged_bytes?: number | bigint;
  over_quota?: boolean;
  has_explicit_policy?: boolean;
}

const whole = (n: number | bigint | undefined) =>
  n === undefined ? undefined : typeof n === 'bigint' ? n : BigInt(Math.trunc(n));

/**
 * Parses the master's JSON keeping every integer exact: a byte count above 2^53 would round as a
 * JavaScript number, so integers read from their source text as bigints.
 */
export function parseExactJson(text: string): unknown {
  return JSON.parse(text, (_key, value, context?: { source?: string }) =>
    typeof value === 'number' &&
    context?.source &&
    /^-?\d+$/.test(context.source) &&
    !Number.isSafeInteger(value)
      ? BigInt(context.source)
      : value,
  );
}

function entryOf(w: WireEntry): LedgerEntry {
  return {
    tenant: w.tenant_id,
    requestedBytes: whole(w.requested_quota_bytes) ?? 0n,
    effectiveBytes: whole(w.effective_quota_bytes),
    chargedBytes: whole(w.charged_bytes),
    overQuota: w.over_quota,
    explicitPolicy: w.has_explicit_policy,
  };
}

export class TenantLedger {
  private readonly client: StoreAdminClient;

  constructor(adminAddress: string, options: AdminRequestOptions = {}) {
    this.client = new StoreAdminClient(adminAddress, adminTimeoutMs, options);
  }

  private async call(method: 'GET' | 'PUT' | 'DELETE', tenant?: string, body?: unknown): Promise<unknown> {
    const path = `/api/v1/tenant_quotas${tenant === undefined ? '' : `?tenant_id=${encodeURIComponent(tenant)}`}`;
    try {
      const res = await this.client.call(method, path, body);
      if (method === 'DELETE' && res.status === 404) return undefined;
      if (res.status !== 200) throw failure(`${method} ${path}`, res);
      return (parseExactJson(res.body) as { data?: unknown }).data;
    } catch (err) {
      throw new LedgerError(classifyLedgerError(err));
    }
  }

  async list(): Promise<LedgerEntry[]> {
    return (((await this.call('GET')) as WireEntry[] | null) ?? []).map(entryOf);
  }

  async put(tenant: string, requestedBytes: bigint): Promise<LedgerEntry> {
    return entryOf(
      // Written as the exact integer: JSON.stringify knows no bigint, and a number would round.
      (await this.call('PUT', tenant, `{"requested_quota_bytes":${requestedBytes}}`)) as WireEntry,
    );
  }

  /** Deletes a tenant; an absent tenant counts as deleted. */
  async delete(tenant: string): Promise<void> {
    await this.call('DELETE', tenant);
  }

  /**
   * Removes one tenant's objects and returns how many the master removed. Never forced: objects read
   * within their lease, or still being written, are skipped. The master reads a missing or empty
   * tenant_id as every tenant, and does not decode it, so only a plain, non-empty name is sent.
   */
  async purge(tenant: string): Promise<number> {
    if (!tenant || encodeURIComponent(tenant) !== tenant)
      throw new LedgerError({
        kind: PoolReason.LedgerUnreachable,
        message: `refusing to remove the objects of tenant "${tenant}": not a plain tenant name`,
      });
    const path = `/api/v1/remove_all?tenant_id=${tenant}`;
    try {
      const res = await this.client.call('POST', path);
      if (res.status !== 200) throw failure(`POST ${path}`, res);
      const removed = (JSON.parse(res.body) as { removed_count?: number }).removed_count;
      return typeof removed === 'number' ? removed : 0;
    } catch (err) {
      throw new LedgerError(classifyLedgerError(err));
    }
  }
}
