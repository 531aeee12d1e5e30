// Conditions, phases and figures of pools and Bindings (KV-cache spec §2.2, §2.3), decided from what
// one master reported this pass. Pure.
import type { UsedByEntry } from '../../api/schema.ts';
import type { KVCachePool, KVCachePoolBinding } from '../../api/types.ts';
import type { LedgerFailure } from '../../store/tenant-ledger.ts';
import type { TenantFigures } from '../../store/tenant-metrics.ts';
import { formatBinarySI, parseQuantityBytes } from '../backend/quantity.ts';
import { type DecidedCondition, decided, nameList } from '../conditions.ts';
import { domainOf, type LedgerPlan } from './plan.ts';

export interface MasterReport {
  /** Why the pool's backend does not resolve to a readable master, if so. */
  unresolved?: {
    reason: 'BackendNotFound' | 'EndpointsNotPublished';
    message: string;
  };
  /** The master keeps no tenant ledger (declared off, or it answered so). */
  ledgerOff: boolean;
  /** A ledger request failed this pass (list, put or delete other than a refused delete). */
  ledgerFailure?: LedgerFailure;
  /** Per-tenant figures from this pass's scrape; undefined when the master was not scraped. */
  figures?: Map<string, TenantFigures>;
  /** What the master can allocate: the tenant gauge, or its total capacity without a ledger. */
  allocatableBytes?: number;
  /** Domains whose delete the master refused because they still hold data. */
  retained: Set<string>;
  clientEndpoint?: string;
}

export interface Decision<S> {
  phase: string;
  phaseMessage: string;
  conditions: DecidedCondition[];
  status: S;
}

const bytes = (n: number | undefined) =>
  n === undefined || !Number.isFinite(n) ? undefined : formatBinarySI(BigInt(Math.trunc(n)));

function phaseOf(
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

export function decidePool(
  pool: KVCachePool,
  bindings: KVCachePoolBinding[],
  plan: LedgerPlan,
  m: MasterReport,
): Decision<Record<string, unknown>> {
  const conditions: DecidedCondition[] = [];
  if (m.unresolved)
    conditions.push(decided('BackendResolved', 'False', m.unresolved.reason, m.unresolved.message));
  else {
    conditions.push(
      decided('BackendResolved', 'True', 'Resolved', `backend ${pool.spec.backends[0]} serves this pool`),
    );
    conditions.push(...ledgerConditions(m));
    conditions.push(capacityCondition(m));
  }
  const live = bindings.filter((b) => !plan.releasing.includes(b));
  const sum = live.reduce((s, b) => s + parseQuantityBytes(b.spec.quota.ceiling), 0n);
  const total = parseQuantityBytes(pool.spec.quota.total);
  conditions.push(
    sum <= total
      ? decided(
          'QuotaWithinTotal',
          'True',
          'WithinTotal',
          `the Bindings' ceilings sum to ${formatBinarySI(sum)}, within the pool's ${formatBinarySI(total)}`,
        )
      : decided(
          'QuotaWithinTotal',
          'False',
          'Oversubscribed',
          `the Bindings' ceilings sum to ${formatBinarySI(sum)}, past the pool's quota.total of ${formatBinarySI(total)}: the master recuts each grant in proportion (see each Binding's effectiveQuota); lower a ceiling or raise quota.total for full grants`,
        ),
  );
  type PoolDomain = NonNullable<NonNullable<KVCachePool['status']>['domains']>[number];
  const domains: PoolDomain[] = live.map((b) => ({
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
  domains.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const usage = poolUsage(
    domains.map((d) => d.name),
    m,
  );
  const usedBy: UsedByEntry[] = live.map((b) => ({
    kind: 'KVCachePoolBinding',
    namespace: b.metadata.namespace!,
    name: b.metadata.name!,
  }));
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
      ['BackendResolved', 'QuotaLedgerAvailable', 'QuotaPolicyWritable', 'CapacityAllocatable'],
      (d) => d.reason === 'MultiTenancyDisabled',
      'the master holds every quota this pool asked for',
    );
  }
  return {
    ...phase,
    conditions,
    status: {
      ...(m.clientEndpoint ? { clientEndpoint: m.clientEndpoint } : {}),
      ...(usage !== undefined ? { usage: { total: usage } } : {}),
      domains,
      ...(usedBy.length ? { usedBy } : {}),
    },
  };
}

function ledgerConditions(m: MasterReport): DecidedCondition[] {
  if (m.ledgerOff) {
    const msg =
      'the master holds no tenant ledger: no per-tenant quota is in force and this pool serves exactly one reuse domain';
    return [
      decided('QuotaLedgerAvailable', 'False', 'MultiTenancyDisabled', msg),
      decided('QuotaPolicyWritable', 'Unknown', 'MultiTenancyDisabled', msg),
    ];
  }
  const f = m.ledgerFailure;
  if (f?.kind === 'LedgerUnreachable') {
    return [
      decided('QuotaLedgerAvailable', 'False', 'LedgerUnreachable', f.message),
      decided('QuotaPolicyWritable', 'Unknown', 'LedgerUnreachable', f.message),
    ];
  }
  return [
    decided('QuotaLedgerAvailable', 'True', 'Available', 'the master keeps a tenant ledger'),
    f?.kind === 'QuotaPolicyNotWritable'
      ? decided(
          'QuotaPolicyWritable',
          'False',
          'QuotaPolicyNotWritable',
          `${f.message}: the quota is NOT in force`,
        )
      : decided('QuotaPolicyWritable', 'True', 'Writable', 'the master persists its tenant policy'),
  ];
}

function capacityCondition(m: MasterReport): DecidedCondition {
  if (m.figures === undefined || m.allocatableBytes === undefined) {
    return decided(
      'CapacityAllocatable',
      'False',
      'CapacityNotObserved',
      'the master’s allocatable capacity has not been read',
    );
  }
  if (m.allocatableBytes <= 0) {
    return decided(
      'CapacityAllocatable',
      'False',
      'NothingToAllocate',
      'the master reports nothing to allocate, so every reuse domain’s effective quota is zero and no write can succeed. Its members have either not mounted their segments yet, or not finished remounting them after the master restarted',
    );
  }
  return decided(
    'CapacityAllocatable',
    'True',
    'Allocatable',
    `the master can allocate ${bytes(m.allocatableBytes)}`,
  );
}

function poolUsage(domains: string[], m: MasterReport): string | undefined {
  if (!m.figures || m.ledgerOff) return undefined;
  if (domains.length === 0) return '0';
  const seen = domains.map((d) => m.figures!.get(d)?.usageBytes).filter((u): u is number => u !== undefined);
  if (seen.length === 0) return undefined;
  return bytes(seen.reduce((a, b) => a + b, 0));
}

function poolReleasable(live: KVCachePoolBinding[], m: MasterReport, domains: string[]): DecidedCondition {
  if (live.length) {
    return decided(
      'Releasable',
      'False',
      'HeldByBindings',
      `Bindings still use this pool: ${nameList(live.map((b) => `${b.metadata.namespace}/${b.metadata.name}`))}; delete them first`,
    );
  }
  const stuck = domains.filter((d) => m.retained.has(d));
  // Only a backend that no longer exists is owed nothing; any other unreadable master still holds entries.
  if (m.unresolved && m.unresolved.reason !== 'BackendNotFound' && !m.ledgerOff) {
    return decided(
      'Releasable',
      'False',
      'LedgerNotReleased',
      `the ledger cannot be released: ${m.unresolved.message}; retrying`,
    );
  }
  if (stuck.length || m.ledgerFailure) {
    return decided(
      'Releasable',
      'False',
      'LedgerNotReleased',
      stuck.length
        ? `the master refuses to drop non-empty domains ${nameList(stuck)}; drain them`
        : `the ledger could not be released: ${m.ledgerFailure!.message}; retrying`,
    );
  }
  return decided('Releasable', 'True', 'Released', 'nothing holds this pool');
}

export function decideBinding(
  b: KVCachePoolBinding,
  plan: LedgerPlan,
  m: MasterReport,
  usedBy: UsedByEntry[],
  releaseFailure?: LedgerFailure,
): Decision<Record<string, unknown>> {
  const domain = domainOf(b);
  const conditions: DecidedCondition[] = [];
  const rivals = plan.contested.get(domain)?.filter((x) => x.binding !== b);
  conditions.push(
    rivals?.length
      ? decided(
          'DomainExclusive',
          'False',
          'DomainClaimedByMultipleBindings',
          `domain ${domain} is also claimed on this master by ${nameList(rivals.map((r) => `${r.binding.metadata.namespace}/${r.binding.metadata.name}`))}; it is managed for neither: delete one of them`,
        )
      : decided(
          'DomainExclusive',
          'True',
          'Exclusive',
          `domain ${domain} belongs to this Binding alone on its master`,
        ),
  );
  let figures: Record<string, unknown> = {};
  if (m.ledgerOff) {
    conditions.push(
      decided(
        'QuotaObserved',
        'True',
        'Observed',
        'the master holds no tenant ledger: there are no per-domain figures',
      ),
    );
    conditions.push(
      decided(
        'QuotaGranted',
        'True',
        'Unenforced',
        'the master runs without multi-tenancy: the ceiling is not enforced and every write lands in the default tenant',
      ),
    );
  } else if (m.unresolved || !m.figures) {
    const why = m.unresolved?.message ?? m.ledgerFailure?.message ?? 'the master was not scraped';
    conditions.push(decided('QuotaObserved', 'False', 'MasterNotScraped', why));
    figures = keepPrevious(b);
  } else {
    const f = m.figures.get(domain);
    if (!f) {
      conditions.push(
        decided(
          'QuotaObserved',
          'True',
          'TenantNotInLedger',
          `the master has no entry for domain ${domain} yet`,
        ),
      );
      conditions.push(
        decided(
          'QuotaGranted',
          'False',
          'NoLedgerEntry',
          `domain ${domain} is not in the master’s ledger yet`,
        ),
      );
    } else {
      const inflight = f.usageIncludesInFlight ? ' (usage includes writes still in flight)' : '';
      const noPolicy =
        f.explicitPolicy === false
          ? '; the master reports no explicit policy for this domain, so its ceiling is not in force yet'
          : '';
      conditions.push(
        decided(
          'QuotaObserved',
          'True',
          'Observed',
          `the master grants ${bytes(f.effectiveBytes) ?? 'no figure'} of the ${bytes(f.requestedBytes) ?? '?'} requested; ${bytes(f.usageBytes) ?? 'no figure'} in use${inflight}${noPolicy}`,
        ),
      );
      conditions.push(grantCondition(domain, f));
      figures = {
        ...(bytes(f.requestedBytes) ? { requestedQuota: bytes(f.requestedBytes) } : {}),
        ...(bytes(f.effectiveBytes) ? { effectiveQuota: bytes(f.effectiveBytes) } : {}),
        ...(bytes(f.usageBytes) ? { usage: bytes(f.usageBytes) } : {}),
        ...(f.overQuota !== undefined ? { overQuota: f.overQuota } : {}),
      };
    }
  }
  let phase: { phase: string; phaseMessage: string };
  if (b.metadata.deletionTimestamp) {
    const r = bindingReleasable(usedBy, domain, releaseFailure);
    conditions.push(r);
    phase = { phase: 'Deleting', phaseMessage: r.message };
  } else {
    const observed = conditions.find((x) => x.type === 'QuotaObserved');
    phase = phaseOf(
      conditions,
      ['DomainExclusive', 'QuotaObserved', 'QuotaGranted'],
      () => false,
      observed?.message ?? '',
    );
  }
  return { ...phase, conditions, status: { ...figures, ...(usedBy.length ? { usedBy } : {}) } };
}

function grantCondition(domain: string, f: TenantFigures): DecidedCondition {
  if (f.effectiveBytes === undefined)
    return decided(
      'QuotaGranted',
      'False',
      'GrantNotExported',
      `the master exports no effective quota for domain ${domain}`,
    );
  if (f.effectiveBytes <= 0) {
    return decided(
      'QuotaGranted',
      'False',
      'ZeroGranted',
      `the master grants domain ${domain} nothing: read the pool’s CapacityAllocatable (members may not have mounted yet), or a proportional recut left this domain no share`,
    );
  }
  return decided(
    'QuotaGranted',
    'True',
    'Granted',
    `the master grants domain ${domain} ${bytes(f.effectiveBytes)}`,
  );
}

function bindingReleasable(usedBy: UsedByEntry[], domain: string, failure?: LedgerFailure): DecidedCondition {
  if (usedBy.length) {
    return decided(
      'Releasable',
      'False',
      'HeldByWorkloads',
      `workloads still use this Binding: ${nameList(usedBy.map((u) => `${u.kind}/${u.name}`))}; delete them first`,
    );
  }
  if (failure?.kind === 'TenantNotEmpty')
    return decided(
      'Releasable',
      'False',
      'LedgerNotReleased',
      `the master refuses to drop domain ${domain} while it holds data; drain it`,
    );
  if (failure)
    return decided(
      'Releasable',
      'False',
      'LedgerRequestFailed',
      `removing domain ${domain} from the ledger failed: ${failure.message}; retrying`,
    );
  return decided('Releasable', 'True', 'Released', 'nothing holds this Binding');
}

/** A failed scrape keeps the previous figures rather than erasing them. */
function keepPrevious(b: KVCachePoolBinding): Record<string, unknown> {
  const s = b.status ?? {};
  return Object.fromEntries(
    (['requestedQuota', 'effectiveQuota', 'usage', 'overQuota', 'blocks', 'hitRate'] as const)
      .filter((k) => s[k] !== undefined)
      .map((k) => [k, s[k]]),
  );
}
