// Whether a deleted Binding may go: no workload names it and the master dropped its domain, or why not
// and the way out (a domain holding data is purged only when asked, never on a disk tier: decision 32).

import { BindingReleasableReason, purgeOnDeleteAnnotation } from '../../api/kvcache-pool-binding.ts';
import { BindingCondition, bindingConditions } from '../../api/kvcache-pool-binding-conditions.ts';
import type { UsedByEntry } from '../../api/schema.ts';
import type { KVCachePoolBinding } from '../../api/types.ts';
import type { LedgerFailure } from '../../store/tenant-ledger.ts';
import { type DecidedCondition, deciderOf, nameList } from '../../vocabulary/conditions.ts';
import { domainOf } from '../../vocabulary/domains.ts';
import { asksPurge, type LedgerPlan } from './plan.ts';
import { readable } from './status.ts';

const decided = deciderOf(bindingConditions);

/** What this pass did about a deleted Binding's domain that holds data (decision 32). */
export interface DrainReport {
  /** The backend whose master holds the domain. */
  backend: string;
  /** Objects the master removed this pass. */
  purged?: number;
  /** What shows the store has a disk tier, when the purge was therefore not attempted. */
  refusedBy?: string;
}

export function bindingReleasable(
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
