// Conditions, phases and figures of Bindings (KV-cache spec §2.3), decided from what one master
// reported this pass. Pure.
import { formatQuantity } from '../../api/readable-quantity.ts';
import type { UsedByEntry } from '../../api/schema.ts';
import type { KVCachePoolBinding } from '../../api/types.ts';
import { type DecidedCondition, decided, nameList } from '../../model/conditions.ts';
import { domainOf } from '../../model/domains.ts';
import type { LedgerFailure } from '../../store/tenant-ledger.ts';
import type { TenantFigures } from '../../store/tenant-metrics.ts';
import type { LedgerPlan } from './plan.ts';
import { bytes, type Decision, type MasterReport, phaseOf, readable } from './status.ts';

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
  const foreign = plan.foreign.get(domain)?.binding === b;
  conditions.push(
    foreign
      ? decided(
          'DomainExclusive',
          'False',
          'TenantExistsOnMaster',
          `the master already holds tenant ${domain}, which kvpool did not register: it is left untouched (not written, not deleted with this Binding) and this Binding grants nothing; use another domain.name (create a new Binding), or remove the tenant from the master if nobody uses it`,
        )
      : rivals?.length
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
  if (foreign) {
    // The tenant's figures are someone else's: none are published here.
    conditions.push(
      decided('QuotaObserved', 'True', 'TenantExistsOnMaster', `tenant ${domain} is not this Binding's`),
      decided('QuotaGranted', 'False', 'TenantExistsOnMaster', `tenant ${domain} is not this Binding's`),
    );
  } else if (m.ledgerOff) {
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
        writeFailure(b, domain, m) ??
          ceilingAboveTotal(b, plan) ??
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

/** A ceiling above the pool's total (a Binding created before its pool): it is not written. */
function ceilingAboveTotal(b: KVCachePoolBinding, plan: LedgerPlan): DecidedCondition | undefined {
  const over = plan.overTotal.get(domainOf(b));
  if (over?.binding !== b) return undefined;
  return decided(
    'QuotaGranted',
    'False',
    'CeilingAboveTotal',
    `spec.quota.ceiling ${formatQuantity(over.bytes)} is more than pool ${over.pool}’s quota.total of ${formatQuantity(over.total)}, so it is not written to the master; lower the ceiling or raise the pool’s total`,
  );
}

/** This Binding's own ledger write failed this pass: its ceiling is not (yet) what the master holds. */
function writeFailure(b: KVCachePoolBinding, domain: string, m: MasterReport): DecidedCondition | undefined {
  const failure = m.putFailures?.get(domain);
  if (!failure) return undefined;
  return decided(
    'QuotaGranted',
    'False',
    'LedgerRequestFailed',
    `writing domain ${domain}'s ceiling (${b.spec.quota.ceiling}) to the master failed: ${failure.message}; retrying`,
  );
}

function grantCondition(domain: string, f: TenantFigures): DecidedCondition {
  if (f.effectiveBytes === undefined)
    return decided(
      'QuotaGranted',
      'False',
      'GrantNotExported',
      `the master exports no effective quota for domain ${domain}`,
    );
  if (f.effectiveBytes <= 0n) {
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
    `the master grants domain ${domain} ${readable(f.effectiveBytes)}`,
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
