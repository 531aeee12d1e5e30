// What one master's tenant ledger should hold (docs/concepts.md, Tenant ledger), decided from every pool
// and Binding on that backend (docs/decisions/0007-one-ledger-pass-per-master.md). Pure: the reconciler
// executes the plan against the master.

import { purgeOnDeleteAnnotation } from '../../api/kvcache-pool-binding.ts';
import type { KVCachePool, KVCachePoolBinding } from '../../api/types.ts';
import type { LedgerEntry } from '../../store/tenant-ledger.ts';
import { domainOf } from '../../vocabulary/domains.ts';
import { parseQuantityBytes } from '../../vocabulary/quantity.ts';

export interface Claim {
  domain: string;
  binding: KVCachePoolBinding;
  pool: string;
  bytes: bigint;
}

export interface LedgerPlan {
  /** One tenant per uncontested, non-releasing Binding: requested = its ceiling, verbatim. */
  desired: Map<string, Claim>;
  /** Domains two or more Bindings on this master claim: managed for neither. */
  contested: Map<string, Claim[]>;
  /** Domains a Binding claims whose tenant the master already holds and this operator did not register. */
  foreign: Map<string, Claim>;
  /** Domains whose Binding's ceiling is above its pool's quota.total: not written, entry left as it is. */
  overTotal: Map<string, Claim & { total: bigint }>;
  /** Bindings being deleted with no workload holding them: their entries go first. */
  releasing: KVCachePoolBinding[];
  /** Bindings being deleted but held by workloads: they keep their claim and quota. */
  held: KVCachePoolBinding[];
  puts: { tenant: string; bytes: bigint }[];
  deletes: string[];
  /** Deleted domains whose objects may be removed: every Binding releasing it asks for the purge. */
  purges: Set<string>;
}

export interface PlanInput {
  pools: KVCachePool[];
  bindings: KVCachePoolBinding[];
  /** Whether a Binding is held by workloads (its usedBy is non-empty). */
  isHeld: (b: KVCachePoolBinding) => boolean;
  /** The ledger as listed this pass; undefined when it could not be read. */
  ledger: LedgerEntry[] | undefined;
  /** Domains this operator registered on this master (its tenant registry): the only entries it may write or delete. */
  registered: Set<string>;
}

export function planLedger(input: PlanInput): LedgerPlan {
  const releasing: KVCachePoolBinding[] = [];
  const held: KVCachePoolBinding[] = [];
  const byDomain = new Map<string, Claim[]>();
  for (const b of input.bindings) {
    if (b.metadata.deletionTimestamp) {
      if (!input.isHeld(b)) {
        releasing.push(b);
        continue;
      }
      held.push(b);
    }
    const claim = {
      domain: domainOf(b),
      binding: b,
      pool: b.spec.poolRef.name,
      bytes: parseQuantityBytes(b.spec.quota.ceiling),
    };
    byDomain.set(claim.domain, [...(byDomain.get(claim.domain) ?? []), claim]);
  }
  const ledger = new Map((input.ledger ?? []).map((e) => [e.tenant, e]));
  const desired = new Map<string, Claim>();
  const contested = new Map<string, Claim[]>();
  const foreign = new Map<string, Claim>();
  const overTotal = new Map<string, Claim & { total: bigint }>();
  const totals = new Map(input.pools.map((p) => [p.metadata.name, parseQuantityBytes(p.spec.quota.total)]));
  for (const [domain, claims] of byDomain) {
    const claim = claims[0]!;
    const total = totals.get(claim.pool);
    if (claims.length > 1) contested.set(domain, claims);
    // Someone else's tenant: never overwritten, and never deleted when the Binding goes.
    else if (ledger.has(domain) && !input.registered.has(domain)) foreign.set(domain, claim);
    // Admission refuses such a ceiling; a Binding created before its pool is judged here instead.
    else if (total !== undefined && claim.bytes > total) overTotal.set(domain, { ...claim, total });
    else desired.set(domain, claim);
  }
  const puts = [...desired.values()]
    .filter(
      (c) =>
        ledger.get(c.domain)?.requestedBytes !== c.bytes || ledger.get(c.domain)?.explicitPolicy === false,
    )
    .map((c) => ({ tenant: c.domain, bytes: c.bytes }))
    .sort((a, b) => compare(a.tenant, b.tenant));
  // Only an entry the master says is an explicit policy is deleted: one it does not say about is not ours.
  const deletes = [...input.registered]
    .filter(
      (d) =>
        !desired.has(d) && !contested.has(d) && !overTotal.has(d) && ledger.get(d)?.explicitPolicy === true,
    )
    .sort(compare);
  return {
    desired,
    contested,
    foreign,
    overTotal,
    releasing,
    held,
    puts: input.ledger ? puts : [],
    deletes: input.ledger ? deletes : [],
    purges: new Set(input.ledger ? deletes.filter((d) => purgeAsked(releasing, d)) : []),
  };
}

/** Whether a Binding asks for its domain's objects to be removed when it is deleted. */
export function asksPurge(b: KVCachePoolBinding): boolean {
  return b.metadata.annotations?.[purgeOnDeleteAnnotation] === 'true';
}

/** Every releasing Binding of the domain asks: one that does not keeps the data for all. */
function purgeAsked(releasing: KVCachePoolBinding[], domain: string): boolean {
  const claimants = releasing.filter((b) => domainOf(b) === domain);
  return claimants.length > 0 && claimants.every(asksPurge);
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
