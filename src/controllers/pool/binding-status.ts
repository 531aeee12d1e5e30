// Conditions, phases and figures of Bindings (KV-cache spec §2.3), decided from what one master
// reported this pass. Pure.

import type { KVCachePoolBindingStatus } from '../../api/kvcache-pool-binding.ts';
import { BindingReleasableReason, purgeOnDeleteAnnotation } from '../../api/kvcache-pool-binding.ts';
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
import { asksPurge, type LedgerPlan } from './plan.ts';
import { bytes, type Decision, type MasterReport, phaseOf, readable, type StatusFields } from './status.ts';

const decided = deciderOf(bindingConditions);

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

/** What this pass did about a deleted Binding's domain that holds data (decision 32). */
export interface DrainReport {
  /** The backend whose master holds the domain. */
  backend: string;
  /** Objects the master removed this pass. */
  purged?: number;
  /** What shows the store has a disk tier, when the purge was therefore not attempted. */
  refusedBy?: string;
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
  const { usedBy } = workloads;
  const domain = domainOf(b);
  const conditions: DecidedCondition[] = [];
  const rivals = plan.contested.get(domain)?.filter((x) => x.binding !== b);
  const foreign = plan.foreign.get(domain)?.binding === b;
  conditions.push(
    foreign
      ? decided(
          BindingCondition.DomainExclusive,
          'False',
          BindingReason.TenantExistsOnMaster,
          `the master already holds tenant ${domain}, which kvpool did not register: it is left untouched (not written, not deleted with this Binding) and this Binding grants nothing; use another domain.name (create a new Binding), or remove the tenant from the master if nobody uses it`,
        )
      : rivals?.length
        ? decided(
            BindingCondition.DomainExclusive,
            'False',
            BindingReason.DomainClaimedByMultipleBindings,
            contestedMessage(
              b,
              domain,
              rivals.map((r) => r.binding),
            ),
          )
        : decided(
            BindingCondition.DomainExclusive,
            'True',
            BindingReason.Exclusive,
            `domain ${domain} belongs to this Binding alone on its master`,
          ),
  );
  let figures: Figures = {};
  if (foreign) {
    // The tenant's figures are someone else's: none are published here.
    conditions.push(
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
    );
  } else if (m.ledgerOff) {
    conditions.push(
      decided(
        BindingCondition.QuotaObserved,
        'True',
        BindingReason.Observed,
        'the master holds no tenant ledger: there are no per-domain figures',
      ),
    );
    conditions.push(
      decided(
        BindingCondition.QuotaGranted,
        'True',
        BindingReason.Unenforced,
        'the master runs without multi-tenancy: the ceiling is not enforced and every write lands in the default tenant',
      ),
    );
  } else if (m.unresolved || !m.figures) {
    const why = m.unresolved?.message ?? m.ledgerFailure?.message ?? 'the master was not scraped';
    conditions.push(decided(BindingCondition.QuotaObserved, 'False', BindingReason.MasterNotScraped, why));
    figures = keepPrevious(b);
  } else {
    const f = m.figures.get(domain);
    if (!f) {
      conditions.push(
        decided(
          BindingCondition.QuotaObserved,
          'True',
          BindingReason.TenantNotInLedger,
          `the master has no entry for domain ${domain} yet`,
        ),
      );
      conditions.push(
        writeFailure(b, domain, m) ??
          ceilingAboveTotal(b, plan) ??
          decided(
            BindingCondition.QuotaGranted,
            'False',
            BindingReason.NoLedgerEntry,
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
          BindingCondition.QuotaObserved,
          'True',
          BindingReason.Observed,
          `the master grants ${readable(f.effectiveBytes) ?? 'no figure'} of the ${readable(f.requestedBytes) ?? '?'} requested; ${readable(f.usageBytes) ?? 'no figure'} in use${inflight}${noPolicy}`,
        ),
      );
      conditions.push(writeFailure(b, domain, m) ?? ceilingAboveTotal(b, plan) ?? grantCondition(domain, f));
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
    const r = bindingReleasable(b, usedBy, releaseFailure, {
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
    status: { ...figures, ...workloadStatus(workloads) },
  };
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

function bindingReleasable(
  b: KVCachePoolBinding,
  usedBy: UsedByEntry[],
  failure: LedgerFailure | undefined,
  held: { plan: LedgerPlan; drain?: DrainReport; heldBytes?: bigint },
): DecidedCondition {
  const domain = domainOf(b);
  const R = BindingReleasableReason;
  if (usedBy.length) {
    return decided(
      BindingCondition.Releasable,
      'False',
      R.HeldByWorkloads,
      `workloads still use this Binding: ${nameList(usedBy.map((u) => `${u.kind}/${u.name}`))}; delete them first`,
    );
  }
  if (failure?.kind === 'TenantNotEmpty') return holdsData(b, held);
  if (failure)
    return decided(
      BindingCondition.Releasable,
      'False',
      R.LedgerRequestFailed,
      `removing domain ${domain} from the ledger failed: ${failure.message}; retrying`,
    );
  return decided(BindingCondition.Releasable, 'True', R.Released, 'nothing holds this Binding');
}

/** A deleted Binding whose domain the master keeps because it holds data: why, and the way out. */
function holdsData(
  b: KVCachePoolBinding,
  { plan, drain, heldBytes }: { plan: LedgerPlan; drain?: DrainReport; heldBytes?: bigint },
): DecidedCondition {
  const R = BindingReleasableReason;
  const { namespace, name } = b.metadata;
  const domain = domainOf(b);
  const subject = `KVCachePoolBinding ${namespace}/${name}`;
  const held =
    heldBytes === undefined
      ? `domain ${domain} holds data on the master (it reported no figure for it)`
      : heldBytes > 0n
        ? `domain ${domain} holds ${readable(heldBytes)} on the master (its charged memory; the master counts no objects per domain)`
        : `domain ${domain} holds objects the master charges no memory for (copies on a disk tier)`;
  if (drain?.refusedBy)
    return decided(
      BindingCondition.Releasable,
      'False',
      R.PurgeUnsafeWithDiskTier,
      `${subject} is not purged: backend ${drain.backend} has a disk tier (${drain.refusedBy}), and the master's per-domain removal empties the whole tier directory of every member holding one of the domain's files, other domains' files included; ${held}. To finish the deletion without purging, remove the finalizer: kubectl patch kvcachepoolbinding ${name} -n ${namespace} --type=merge -p '{"metadata":{"finalizers":null}}' (the objects and the ledger entry stay on the master; kvpool drops the entry once the domain is empty)`,
    );
  if (plan.purges.has(domain))
    return decided(
      BindingCondition.Releasable,
      'False',
      R.Purging,
      `${subject} is being purged (${purgeOnDeleteAnnotation}): the master removed ${drain?.purged ?? 0} objects this pass, and ${held}: objects read within their lease (the master's default_kv_lease_ttl) or still being written are removed once it ends; retrying`,
    );
  const rule =
    "the master refuses to drop a domain that holds data, and deleting the Binding drops this domain's cached KV: recomputable, but its engines pay the prefill again";
  if (asksPurge(b))
    return decided(
      BindingCondition.Releasable,
      'False',
      R.LedgerNotReleased,
      `${subject} is not released: ${held}; ${rule}. The purge it asks for waits until every Binding of domain ${domain} being deleted carries ${purgeOnDeleteAnnotation}=true`,
    );
  return decided(
    BindingCondition.Releasable,
    'False',
    R.LedgerNotReleased,
    `${subject} is not released: ${held}; ${rule}. To remove that data and finish the deletion: kubectl annotate kvcachepoolbinding ${name} -n ${namespace} ${purgeOnDeleteAnnotation}=true`,
  );
}

/** A failed scrape keeps the previous figures rather than erasing them. */
function keepPrevious(b: KVCachePoolBinding): Figures {
  const s = b.status ?? {};
  return Object.fromEntries(figureFields.filter((k) => s[k] !== undefined).map((k) => [k, s[k]])) as Figures;
}
