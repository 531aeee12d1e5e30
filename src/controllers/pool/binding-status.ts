// Conditions, phases and figures of Bindings (docs/concepts.md: Binding, Domain, Tenant ledger),
// decided from what one master reported this pass. Pure.

import type { KVCachePoolBindingStatus } from '../../api/kvcache-pool-binding.ts';
import {
  BindingCondition,
  BindingReason,
  bindingConditions,
} from '../../api/kvcache-pool-binding-conditions.ts';
import type { PoolPrefix } from '../../api/pool-prefix.ts';
import type { UsedByEntry } from '../../api/schema.ts';
import type { KVCachePoolBinding } from '../../api/types.ts';
import { formatQuantity } from '../../kube/readable-quantity.ts';
import type { LedgerFailure } from '../../store/tenant-ledger.ts';
import type { TenantFigures } from '../../store/tenant-metrics.ts';
import { type DecidedCondition, deciderOf, nameList } from '../../vocabulary/conditions.ts';
import { domainOf } from '../../vocabulary/domains.ts';
import { bindingReleasable, type DrainReport } from './binding-release.ts';
import type { LedgerPlan } from './plan.ts';
import { bytes, type Decision, type MasterReport, phaseOf, readable, type StatusFields } from './status.ts';

const decided = deciderOf(bindingConditions);

export type { DrainReport } from './binding-release.ts';

type BindingStatus = StatusFields<KVCachePoolBindingStatus>;
const figureFields = ['requestedQuota', 'effectiveQuota', 'usage', 'overQuota', 'blocks', 'hitRate'] as const;
/** What the master reports of the domain. */
type Figures = Pick<BindingStatus, (typeof figureFields)[number]>;

/** The ModelDeployments that name a Binding: who holds its deletion, and what their engines report. */
export interface BindingWorkloads {
  usedBy: UsedByEntry[];
  /** Their status.poolPrefix summed; undefined when none reported. */
  poolPrefix?: PoolPrefix;
}

/** The status fields a Binding's workloads give. */
export function workloadStatus({
  usedBy,
  poolPrefix,
}: BindingWorkloads): Pick<BindingStatus, 'poolPrefix' | 'usedBy'> {
  return { ...(poolPrefix ? { poolPrefix } : {}), ...(usedBy.length ? { usedBy } : {}) };
}

/** Who else claims the domain: Bindings of this namespace by name, others only counted (tenancy). */
function contestedMessage(b: KVCachePoolBinding, domain: string, rivals: KVCachePoolBinding[]): string {
  const ns = b.metadata.namespace;
  const own = rivals.filter((r) => r.metadata.namespace === ns).map((r) => `${ns}/${r.metadata.name}`);
  const foreign = rivals.length - own.length;
  const claimants = [
    ...(own.length ? [nameList(own)] : []),
    ...(foreign
      ? [foreign === 1 ? '1 Binding in another namespace' : `${foreign} Bindings in other namespaces`]
      : []),
  ].join(' and ');
  const fix = foreign
    ? 'delete this Binding and create one with another spec.domain.name, or ask an administrator which claim should stay'
    : 'delete one of them';
  return `domain ${domain} is also claimed on this master by ${claimants}; it is managed for neither: ${fix}`;
}

export function decideBinding(
  b: KVCachePoolBinding,
  plan: LedgerPlan,
  m: MasterReport,
  workloads: BindingWorkloads,
  releaseFailure?: LedgerFailure,
  drain?: DrainReport,
): Decision<BindingStatus> {
  const domain = domainOf(b);
  const foreign = plan.foreign.get(domain)?.binding === b;
  const quota = quotaVerdict(b, plan, m, domain, foreign);
  const conditions = [exclusiveCondition(b, plan, domain, foreign), ...quota.conditions];
  let phase: { phase: string; phaseMessage: string };
  if (b.metadata.deletionTimestamp) {
    const r = bindingReleasable(b, workloads.usedBy, releaseFailure, {
      plan,
      drain,
      heldBytes: m.figures?.get(domain)?.usageBytes,
    });
    conditions.push(r);
    phase = { phase: 'Deleting', phaseMessage: r.message };
  } else {
    const observed = conditions.find((x) => x.type === BindingCondition.QuotaObserved);
    phase = phaseOf(
      conditions,
      [BindingCondition.DomainExclusive, BindingCondition.QuotaObserved, BindingCondition.QuotaGranted],
      () => false,
      observed?.message ?? '',
    );
  }
  return {
    ...phase,
    conditions,
    status: { ...quota.figures, ...workloadStatus(workloads) },
  };
}

/** DomainExclusive: the domain is this Binding's alone, a tenant kvpool did not register, or contested. */
function exclusiveCondition(
  b: KVCachePoolBinding,
  plan: LedgerPlan,
  domain: string,
  foreign: boolean,
): DecidedCondition {
  if (foreign)
    return decided(
      BindingCondition.DomainExclusive,
      'False',
      BindingReason.TenantExistsOnMaster,
      `the master already holds tenant ${domain}, which kvpool did not register: it is left untouched (not written, not deleted with this Binding) and this Binding grants nothing; use another domain.name (create a new Binding), or remove the tenant from the master if nobody uses it`,
    );
  const rivals = plan.contested.get(domain)?.filter((x) => x.binding !== b);
  if (rivals?.length)
    return decided(
      BindingCondition.DomainExclusive,
      'False',
      BindingReason.DomainClaimedByMultipleBindings,
      contestedMessage(
        b,
        domain,
        rivals.map((r) => r.binding),
      ),
    );
  return decided(
    BindingCondition.DomainExclusive,
    'True',
    BindingReason.Exclusive,
    `domain ${domain} belongs to this Binding alone on its master`,
  );
}

/** QuotaObserved and QuotaGranted, with the figures the master reported of the domain. */
interface QuotaVerdict {
  conditions: DecidedCondition[];
  figures: Figures;
}

function quotaVerdict(
  b: KVCachePoolBinding,
  plan: LedgerPlan,
  m: MasterReport,
  domain: string,
  foreign: boolean,
): QuotaVerdict {
  // A foreign tenant's figures are someone else's: none are published here.
  if (foreign) return { conditions: notThisBindings(domain), figures: {} };
  if (m.ledgerOff) return { conditions: ledgerOff(), figures: {} };
  if (m.unresolved || !m.figures) {
    const why = m.unresolved?.message ?? m.ledgerFailure?.message ?? 'the master was not scraped';
    return {
      conditions: [decided(BindingCondition.QuotaObserved, 'False', BindingReason.MasterNotScraped, why)],
      figures: keepPrevious(b),
    };
  }
  const f = m.figures.get(domain);
  if (!f) return { conditions: notInLedger(b, plan, m, domain), figures: {} };
  return observedQuota(b, plan, m, domain, f);
}

function notThisBindings(domain: string): DecidedCondition[] {
  return [
    decided(
      BindingCondition.QuotaObserved,
      'True',
      BindingReason.TenantExistsOnMaster,
      `tenant ${domain} is not this Binding's`,
    ),
    decided(
      BindingCondition.QuotaGranted,
      'False',
      BindingReason.TenantExistsOnMaster,
      `tenant ${domain} is not this Binding's`,
    ),
  ];
}

function ledgerOff(): DecidedCondition[] {
  return [
    decided(
      BindingCondition.QuotaObserved,
      'True',
      BindingReason.Observed,
      'the master holds no tenant ledger: there are no per-domain figures',
    ),
    decided(
      BindingCondition.QuotaGranted,
      'True',
      BindingReason.Unenforced,
      'the master runs without multi-tenancy: the ceiling is not enforced and every write lands in the default tenant',
    ),
  ];
}

function notInLedger(
  b: KVCachePoolBinding,
  plan: LedgerPlan,
  m: MasterReport,
  domain: string,
): DecidedCondition[] {
  return [
    decided(
      BindingCondition.QuotaObserved,
      'True',
      BindingReason.TenantNotInLedger,
      `the master has no entry for domain ${domain} yet`,
    ),
    writeFailure(b, domain, m) ??
      ceilingAboveTotal(b, plan) ??
      decided(
        BindingCondition.QuotaGranted,
        'False',
        BindingReason.NoLedgerEntry,
        `domain ${domain} is not in the master’s ledger yet`,
      ),
  ];
}

function observedQuota(
  b: KVCachePoolBinding,
  plan: LedgerPlan,
  m: MasterReport,
  domain: string,
  f: TenantFigures,
): QuotaVerdict {
  const inflight = f.usageIncludesInFlight ? ' (usage includes writes still in flight)' : '';
  const noPolicy =
    f.explicitPolicy === false
      ? '; the master reports no explicit policy for this domain, so its ceiling is not in force yet'
      : '';
  const conditions = [
    decided(
      BindingCondition.QuotaObserved,
      'True',
      BindingReason.Observed,
      `the master grants ${readable(f.effectiveBytes) ?? 'no figure'} of the ${readable(f.requestedBytes) ?? '?'} requested; ${readable(f.usageBytes) ?? 'no figure'} in use${inflight}${noPolicy}`,
    ),
    writeFailure(b, domain, m) ?? ceilingAboveTotal(b, plan) ?? grantCondition(domain, f),
  ];
  const figures: Figures = {
    ...(bytes(f.requestedBytes) ? { requestedQuota: bytes(f.requestedBytes) } : {}),
    ...(bytes(f.effectiveBytes) ? { effectiveQuota: bytes(f.effectiveBytes) } : {}),
    ...(bytes(f.usageBytes) ? { usage: bytes(f.usageBytes) } : {}),
    ...(f.overQuota !== undefined ? { overQuota: f.overQuota } : {}),
  };
  return { conditions, figures };
}

/** A ceiling above the pool's total (a Binding created before its pool): it is not written. */
function ceilingAboveTotal(b: KVCachePoolBinding, plan: LedgerPlan): DecidedCondition | undefined {
  const over = plan.overTotal.get(domainOf(b));
  if (over?.binding !== b) return undefined;
  return decided(
    BindingCondition.QuotaGranted,
    'False',
    BindingReason.CeilingAboveTotal,
    `spec.quota.ceiling ${formatQuantity(over.bytes)} is more than pool ${over.pool}’s quota.total of ${formatQuantity(over.total)}, so it is not written to the master; lower the ceiling or raise the pool’s total`,
  );
}

/** This Binding's own ledger write failed this pass: its ceiling is not (yet) what the master holds. */
function writeFailure(b: KVCachePoolBinding, domain: string, m: MasterReport): DecidedCondition | undefined {
  const failure = m.putFailures?.get(domain);
  if (!failure) return undefined;
  return decided(
    BindingCondition.QuotaGranted,
    'False',
    BindingReason.LedgerRequestFailed,
    `writing domain ${domain}'s ceiling (${b.spec.quota.ceiling}) to the master failed: ${failure.message}; retrying`,
  );
}

function grantCondition(domain: string, f: TenantFigures): DecidedCondition {
  if (f.effectiveBytes === undefined)
    return decided(
      BindingCondition.QuotaGranted,
      'False',
      BindingReason.GrantNotExported,
      `the master exports no effective quota for domain ${domain}`,
    );
  if (f.effectiveBytes <= 0n) {
    return decided(
      BindingCondition.QuotaGranted,
      'False',
      BindingReason.ZeroGranted,
      `the master grants domain ${domain} nothing: read the pool’s CapacityAllocatable (members may not have mounted yet), or a proportional recut left this domain no share`,
    );
  }
  const cut = f.requestedBytes !== undefined && f.effectiveBytes < f.requestedBytes;
  return decided(
    BindingCondition.QuotaGranted,
    'True',
    BindingReason.Granted,
    cut
      ? `the master grants domain ${domain} ${readable(f.effectiveBytes)} of its ${readable(f.requestedBytes)} ceiling: the ceilings of all Bindings on the master sum past what it can allocate, so it cuts each in proportion (the pool's QuotaWithinTotal gives both figures); lower ceilings or give the store more member memory for the full ceiling`
      : `the master grants domain ${domain} ${readable(f.effectiveBytes)}`,
  );
}

/** A failed scrape keeps the previous figures rather than erasing them. */
function keepPrevious(b: KVCachePoolBinding): Figures {
  const s = b.status ?? {};
  return Object.fromEntries(figureFields.filter((k) => s[k] !== undefined).map((k) => [k, s[k]])) as Figures;
}
