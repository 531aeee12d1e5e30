// Conditions, phases and figures of pools (docs/concepts.md, Pool; the counts: decision 19), decided
// from what one master reported this pass, and what pool and Binding decisions share. Pure.
import type { ReasonOf } from '../../api/condition-table.ts';
import type { KVCachePoolStatus } from '../../api/kvcache-pool.ts';
import { PoolCondition, PoolReason, poolConditions } from '../../api/kvcache-pool-conditions.ts';
import type { UsedByEntry } from '../../api/schema.ts';
import type { KVCachePool, KVCachePoolBinding } from '../../api/types.ts';
import { formatQuantity } from '../../kube/readable-quantity.ts';
import type { LedgerFailure } from '../../store/tenant-ledger.ts';
import type { TenantFigures } from '../../store/tenant-metrics.ts';
import { type DecidedCondition, deciderOf, nameList } from '../../vocabulary/conditions.ts';
import { domainOf } from '../../vocabulary/domains.ts';
import { formatBinarySI, parseQuantityBytes } from '../../vocabulary/quantity.ts';
import type { LedgerPlan } from './plan.ts';

const decided = deciderOf(poolConditions);

export interface MasterReport {
  /** Why the pool's backend does not resolve to a readable master, if so. */
  unresolved?: {
    /** ChildConflict: an object the backend does not own holds the name of its tenant registry or policy. */
    reason: Exclude<
      ReasonOf<typeof poolConditions, typeof PoolCondition.BackendResolved>,
      typeof PoolReason.Resolved
    >;
    message: string;
  };
  /** The master keeps no tenant ledger (declared off, or it answered so). */
  ledgerOff: boolean;
  /** The master's ledger failed as a whole this pass (its listing, or a policy it cannot persist). */
  ledgerFailure?: LedgerFailure;
  /** Tenants whose write failed this pass, each reported on its own Binding. */
  putFailures?: Map<string, LedgerFailure>;
  /** Per-tenant figures from this pass's scrape; undefined when the master was not scraped. */
  figures?: Map<string, TenantFigures>;
  /** What the master can allocate: the tenant gauge, or its total capacity without a ledger. */
  allocatableBytes?: bigint;
  /** Domains whose delete the master refused because they still hold data. */
  retained: Set<string>;
  clientEndpoint?: string;
}

/** A kind's own status fields: the phase and conditions come with the decision. */
export type StatusFields<S> = Omit<S, 'phase' | 'phaseMessage' | 'conditions'>;

export interface Decision<S> {
  phase: string;
  phaseMessage: string;
  conditions: DecidedCondition[];
  status: S;
}

export const bytes = (n: bigint | undefined) => (n === undefined ? undefined : formatBinarySI(n));

/** A figure for a message, as people write it. */
export const readable = (n: number | bigint | undefined) =>
  n === undefined || (typeof n === 'number' && !Number.isFinite(n)) ? undefined : formatQuantity(n);

export function phaseOf(
  conditions: DecidedCondition[],
  axes: string[],
  exempt: (d: DecidedCondition) => boolean,
  ready: string,
) {
  for (const axis of axes) {
    const d = conditions.find((x) => x.type === axis);
    if (!d) return { phase: 'Provisioning', phaseMessage: `${axis} has not been observed yet` };
    if (d.status !== 'True' && !exempt(d)) return { phase: 'Error', phaseMessage: d.message };
  }
  return { phase: 'Ready', phaseMessage: ready };
}

/** How many domains and Bindings a pool's status lists by name; the counts cover all of them. */
export const listedInStatus = 100;

type PoolDomain = NonNullable<NonNullable<KVCachePool['status']>['domains']>[number];

export function decidePool(
  pool: KVCachePool,
  bindings: KVCachePoolBinding[],
  plan: LedgerPlan,
  m: MasterReport,
): Decision<StatusFields<KVCachePoolStatus>> {
  const releasing = new Set(plan.releasing);
  const live = bindings.filter((b) => !releasing.has(b));
  const conditions = [...masterConditions(pool, m), quotaWithinTotal(pool, live, m)];
  const domains = poolDomains(pool, live, plan, m);
  const usage = poolUsage(
    domains.map((d) => d.name),
    m,
  );
  // Sorted: the Bindings come in the informer's event order, which must not rewrite the status.
  const usedBy: UsedByEntry[] = live
    .map((b) => ({ kind: 'KVCachePoolBinding', namespace: b.metadata.namespace!, name: b.metadata.name! }))
    .sort((a, b) => compareRefs(a, b));
  let phase: { phase: string; phaseMessage: string };
  if (pool.metadata.deletionTimestamp) {
    const releasable = poolReleasable(
      live,
      m,
      domains.map((d) => d.name),
    );
    conditions.push(releasable);
    phase = { phase: 'Deleting', phaseMessage: releasable.message };
  } else {
    phase = phaseOf(
      conditions,
      [
        PoolCondition.BackendResolved,
        PoolCondition.QuotaLedgerAvailable,
        PoolCondition.QuotaPolicyWritable,
        PoolCondition.CapacityAllocatable,
      ],
      (d) => d.reason === PoolReason.MultiTenancyDisabled,
      'the master holds every quota this pool asked for',
    );
  }
  return {
    ...phase,
    conditions,
    status: {
      ...(m.clientEndpoint ? { clientEndpoint: m.clientEndpoint } : {}),
      ...(usage !== undefined ? { usage: { total: usage } } : {}),
      // Counts, and lists cut to their first entries: a pool's status stays writable with any number of Bindings.
      domainCount: domains.length,
      domains: domains.slice(0, listedInStatus),
      bindingCount: live.length,
      ...(usedBy.length ? { usedBy: usedBy.slice(0, listedInStatus) } : {}),
    },
  };
}

/** BackendResolved, then (when it resolved) what the master's ledger and capacity allow. */
function masterConditions(pool: KVCachePool, m: MasterReport): DecidedCondition[] {
  if (m.unresolved)
    return [decided(PoolCondition.BackendResolved, 'False', m.unresolved.reason, m.unresolved.message)];
  return [
    decided(
      PoolCondition.BackendResolved,
      'True',
      PoolReason.Resolved,
      `backend ${pool.spec.backends[0]} serves this pool`,
    ),
    ...ledgerConditions(m),
    capacityCondition(m),
  ];
}

/** Whether the live Bindings' ceilings fit the pool's quota.total: a note only, no grant depends on it. */
function quotaWithinTotal(pool: KVCachePool, live: KVCachePoolBinding[], m: MasterReport): DecidedCondition {
  const sum = live.reduce((s, b) => s + parseQuantityBytes(b.spec.quota.ceiling), 0n);
  const total = parseQuantityBytes(pool.spec.quota.total);
  const grants = grantsOnMaster(m);
  return sum <= total
    ? decided(
        PoolCondition.QuotaWithinTotal,
        'True',
        PoolReason.WithinTotal,
        `the Bindings' ceilings sum to ${formatQuantity(sum)}, within the pool's ${formatQuantity(total)}${grants.cut ? `. ${grants.text}` : ''}`,
      )
    : decided(
        PoolCondition.QuotaWithinTotal,
        'False',
        PoolReason.Oversubscribed,
        `the Bindings' ceilings sum to ${formatQuantity(sum)}, past the pool's quota.total of ${formatQuantity(total)}. ${grants.text}`,
      );
}

/** The domains the pool lists, by name: its live Bindings' own, and those the master still retains. */
function poolDomains(
  pool: KVCachePool,
  live: KVCachePoolBinding[],
  plan: LedgerPlan,
  m: MasterReport,
): PoolDomain[] {
  const domains: PoolDomain[] = live
    .filter(
      (b) => plan.foreign.get(domainOf(b))?.binding !== b && plan.overTotal.get(domainOf(b))?.binding !== b,
    )
    .map((b) => ({
      name: domainOf(b),
      binding: { namespace: b.metadata.namespace!, name: b.metadata.name! },
      blockSize: b.spec.domain.blockSize,
      dtype: b.spec.domain.dtype,
    }));
  // A contested domain is listed once (its first claimant): status.domains is keyed by name.
  const seenNames = new Set<string>();
  for (let k = domains.length - 1; k >= 0; k--) {
    if (seenNames.has(domains[k]!.name)) domains.splice(k, 1);
    else seenNames.add(domains[k]!.name);
  }
  for (const retained of m.retained) {
    const prior = pool.status?.domains?.find((d) => d.name === retained);
    if (prior && !domains.some((d) => d.name === retained)) domains.push(prior);
  }
  return domains.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

/**
 * Whether the master cuts its grants, and why, in words. It grants every ceiling in full while the
 * ceilings of all tenants on it (every pool's Bindings, and tenants of others) sum to no more than it
 * can allocate, its members' segments (a disk tier does not count); past that it cuts each grant in
 * proportion. A pool's quota.total plays no part.
 */
export function grantsOnMaster(m: MasterReport): { cut?: boolean; text: string } {
  const requested = [...(m.figures?.values() ?? [])]
    .map((f) => f.requestedBytes)
    .filter((r): r is bigint => r !== undefined);
  const allocatable = m.allocatableBytes;
  const lever =
    'for full grants lower ceilings or give the store more member memory; quota.total changes no grant';
  if (m.ledgerOff || !requested.length || allocatable === undefined || allocatable <= 0n)
    return {
      text: `The master cuts every grant in proportion only when the ceilings of all Bindings on it sum past what it can allocate (its members' segments, not a disk tier: see CapacityAllocatable); ${lever}`,
    };
  const asked = requested.reduce((a, b) => a + b, 0n);
  if (asked > allocatable)
    return {
      cut: true,
      text: `The master cuts every grant in proportion (see each Binding's effectiveQuota): the ceilings of all Bindings on it sum to ${formatQuantity(asked)} and it can allocate ${formatQuantity(allocatable)} (its members' segments, not a disk tier); ${lever}`,
    };
  return {
    cut: false,
    text: `The master grants every ceiling in full: the ceilings of all Bindings on it sum to ${formatQuantity(asked)} and it can allocate ${formatQuantity(allocatable)}`,
  };
}

function compareRefs(a: { namespace: string; name: string }, b: { namespace: string; name: string }) {
  const x = `${a.namespace}/${a.name}`;
  const y = `${b.namespace}/${b.name}`;
  return x < y ? -1 : x > y ? 1 : 0;
}

function ledgerConditions(m: MasterReport): DecidedCondition[] {
  if (m.ledgerOff) {
    const msg =
      'the master holds no tenant ledger: no per-tenant quota is in force and this pool serves exactly one reuse domain';
    return [
      decided(PoolCondition.QuotaLedgerAvailable, 'False', PoolReason.MultiTenancyDisabled, msg),
      decided(PoolCondition.QuotaPolicyWritable, 'Unknown', PoolReason.MultiTenancyDisabled, msg),
    ];
  }
  const f = m.ledgerFailure;
  if (f?.kind === PoolReason.LedgerUnreachable) {
    return [
      decided(PoolCondition.QuotaLedgerAvailable, 'False', PoolReason.LedgerUnreachable, f.message),
      decided(PoolCondition.QuotaPolicyWritable, 'Unknown', PoolReason.LedgerUnreachable, f.message),
    ];
  }
  return [
    decided(
      PoolCondition.QuotaLedgerAvailable,
      'True',
      PoolReason.Available,
      'the master keeps a tenant ledger',
    ),
    f?.kind === PoolReason.QuotaPolicyNotWritable
      ? decided(
          PoolCondition.QuotaPolicyWritable,
          'False',
          PoolReason.QuotaPolicyNotWritable,
          `${f.message}: the quota is NOT in force`,
        )
      : decided(
          PoolCondition.QuotaPolicyWritable,
          'True',
          PoolReason.Writable,
          'the master persists its tenant policy',
        ),
  ];
}

function capacityCondition(m: MasterReport): DecidedCondition {
  if (m.figures === undefined || m.allocatableBytes === undefined) {
    return decided(
      PoolCondition.CapacityAllocatable,
      'False',
      PoolReason.CapacityNotObserved,
      'the master’s allocatable capacity has not been read',
    );
  }
  if (m.allocatableBytes <= 0n) {
    return decided(
      PoolCondition.CapacityAllocatable,
      'False',
      PoolReason.NothingToAllocate,
      'the master reports nothing to allocate, so every reuse domain’s effective quota is zero and no write can succeed. Its members have either not mounted their segments yet, or not finished remounting them after the master restarted',
    );
  }
  return decided(
    PoolCondition.CapacityAllocatable,
    'True',
    PoolReason.Allocatable,
    `the master can allocate ${readable(m.allocatableBytes)}`,
  );
}

function poolUsage(domains: string[], m: MasterReport): string | undefined {
  if (!m.figures || m.ledgerOff) return undefined;
  if (domains.length === 0) return '0';
  const seen = domains.map((d) => m.figures!.get(d)?.usageBytes).filter((u): u is bigint => u !== undefined);
  if (seen.length === 0) return undefined;
  return bytes(seen.reduce((a, b) => a + b, 0n));
}

function poolReleasable(live: KVCachePoolBinding[], m: MasterReport, domains: string[]): DecidedCondition {
  if (live.length) {
    return decided(
      PoolCondition.Releasable,
      'False',
      PoolReason.HeldByBindings,
      `Bindings still use this pool: ${nameList(live.map((b) => `${b.metadata.namespace}/${b.metadata.name}`))}; delete them first`,
    );
  }
  const stuck = domains.filter((d) => m.retained.has(d));
  // Only a backend that no longer exists is owed nothing; any other unreadable master still holds entries.
  if (m.unresolved && m.unresolved.reason !== PoolReason.BackendNotFound && !m.ledgerOff) {
    return decided(
      PoolCondition.Releasable,
      'False',
      PoolReason.LedgerNotReleased,
      `the ledger cannot be released: ${m.unresolved.message}; retrying`,
    );
  }
  if (stuck.length || m.ledgerFailure) {
    return decided(
      PoolCondition.Releasable,
      'False',
      PoolReason.LedgerNotReleased,
      stuck.length
        ? `the master refuses to drop non-empty domains ${nameList(stuck)}; drain them`
        : `the ledger could not be released: ${m.ledgerFailure!.message}; retrying`,
    );
  }
  return decided(PoolCondition.Releasable, 'True', PoolReason.Released, 'nothing holds this pool');
}
