// The doctor's rows about pools, Bindings and workloads: the backend a pool needs, the tenant ledger,
// ceilings and grants, domains, held deletions, and engine/store version lines. Pure.
import { conditionOf } from '../api/conditions.ts';
import { BackendCondition, BackendReason } from '../api/kvcache-backend-conditions.ts';
import { BindingReleasableReason, purgeOnDeleteAnnotation } from '../api/kvcache-pool-binding.ts';
import { BindingCondition, BindingReason } from '../api/kvcache-pool-binding-conditions.ts';
import { PoolCondition, PoolReason } from '../api/kvcache-pool-conditions.ts';
import type { KVCacheBackend, KVCachePool, KVCachePoolBinding } from '../api/types.ts';
import { formatQuantity } from '../kube/readable-quantity.ts';
import { parseQuantityBytes } from '../vocabulary/quantity.ts';
import { componentLabel, instanceLabel, leaderComponent } from '../vocabulary/store-objects.ts';
import { type Check, type Finding, said } from './finding.ts';
import type { Snapshot } from './snapshot.ts';
import { clientLine, engineVersion, storeLine } from './version-lines.ts';

const poolObject = (p: KVCachePool) => `KVCachePool/${p.metadata.name}`;
const bindingObject = (b: KVCachePoolBinding) =>
  `KVCachePoolBinding/${b.metadata.namespace}/${b.metadata.name}`;
const poolOf = (s: Snapshot, b: KVCachePoolBinding) =>
  s.pools.find((p) => p.metadata.name === b.spec.poolRef.name);

const poolBackend: Check = {
  id: 'pool-backend',
  title: `Pool without a usable backend (${PoolCondition.BackendResolved}=False, ${PoolCondition.CapacityAllocatable}=False)`,
  run(s) {
    const out: Finding[] = [];
    for (const p of s.pools) {
      const resolved = conditionOf(p, PoolCondition.BackendResolved);
      const capacity = conditionOf(p, PoolCondition.CapacityAllocatable);
      const backend = p.spec.backends[0];
      if (resolved?.status === 'False')
        out.push({
          object: poolObject(p),
          severity: 'error',
          summary: `backend ${backend} does not resolve`,
          evidence: [said(resolved)],
          fix:
            resolved.reason === PoolReason.BackendNotFound
              ? `create KVCacheBackend ${backend}, or delete this pool (its backend cannot be changed)`
              : `backend ${backend} has not published its endpoints: see its leader (kubectl kvpool doctor, leader-unavailable)`,
        });
      // Unread capacity behind an unreachable ledger is the ledger row's finding, not a second one.
      else if (
        capacity?.status === 'False' &&
        (capacity.reason === PoolReason.NothingToAllocate ||
          conditionOf(p, PoolCondition.QuotaLedgerAvailable)?.status === 'True')
      )
        out.push({
          object: poolObject(p),
          severity: capacity.reason === PoolReason.NothingToAllocate ? 'error' : 'warning',
          summary: `the store of backend ${backend} has nothing to allocate`,
          evidence: [said(capacity)],
          fix:
            capacity.reason === PoolReason.NothingToAllocate
              ? `no member of ${backend} has mounted a segment, or a restarted master is remounting them (about 30 s): read its MembersMounted`
              : 'the master’s allocatable capacity has not been read yet: see the ledger-unavailable and leader-unavailable rows',
        });
    }
    return out;
  },
};

const ledgerUnavailable: Check = {
  id: 'ledger-unavailable',
  title: `Tenant ledger unavailable (${PoolCondition.QuotaLedgerAvailable}=False, ${PoolCondition.QuotaPolicyWritable}=False)`,
  run(s) {
    const out: Finding[] = [];
    for (const p of s.pools) {
      const ledger = conditionOf(p, PoolCondition.QuotaLedgerAvailable);
      const writable = conditionOf(p, PoolCondition.QuotaPolicyWritable);
      if (ledger?.status === 'False' && ledger.reason === PoolReason.MultiTenancyDisabled)
        out.push({
          object: poolObject(p),
          severity: 'info',
          summary: 'the backend runs without multi-tenancy: ceilings are not enforced, on purpose',
          evidence: [said(ledger)],
          fix: 'nothing to fix; to enforce ceilings, serve the pool from a backend with leader.multiTenancy on (the default)',
        });
      else if (ledger?.status === 'False')
        out.push({
          object: poolObject(p),
          severity: 'error',
          summary: 'the master did not answer the ledger request: grants are not kept in step',
          evidence: [said(ledger)],
          fix: `see backend ${p.spec.backends[0]}'s LeaderAvailable (kubectl kvpool status); the pool retries every 30 s`,
        });
      if (writable?.status === 'False')
        out.push({
          object: poolObject(p),
          severity: 'error',
          summary: 'the master cannot persist its tenant policy: the quota is NOT in force',
          evidence: [said(writable)],
          fix: "the leader's /var/lib/mooncake must be writable (its emptyDir volume); read the leader's log",
        });
    }
    return out;
  },
};

const oversubscription: Check = {
  id: 'oversubscription',
  title: `Ceilings past the pool's total (${PoolCondition.QuotaWithinTotal}=False, ${PoolReason.Oversubscribed})`,
  run(s) {
    return s.pools.flatMap((p) => {
      const c = conditionOf(p, PoolCondition.QuotaWithinTotal);
      if (c?.status !== 'False') return [];
      const bindings = s.bindings.filter((b) => b.spec.poolRef.name === p.metadata.name);
      const grants = bindings.map(
        (b) =>
          `${b.metadata.namespace}/${b.metadata.name}: ceiling ${formatQuantity(parseQuantityBytes(b.spec.quota.ceiling))}, grant ${b.status?.effectiveQuota === undefined ? 'not reported' : formatQuantity(parseQuantityBytes(b.status.effectiveQuota))}`,
      );
      const cut = bindings.some(
        (b) =>
          b.status?.effectiveQuota !== undefined &&
          parseQuantityBytes(b.status.effectiveQuota) < parseQuantityBytes(b.spec.quota.ceiling),
      );
      return [
        {
          object: poolObject(p),
          severity: 'info' as const,
          summary: cut
            ? 'the Bindings ask for more than the pool’s quota.total, and the store cuts their grants'
            : 'the Bindings ask for more than the pool’s quota.total; the store cuts no grant',
          evidence: [said(c), ...grants],
          fix: `not a fault: quota.total only budgets the ceilings and changes no grant. The store cuts every grant in proportion while the ceilings of all Bindings on backend ${p.spec.backends[0]} sum past what its master can allocate (its members' segments, not a disk tier: the pool's CapacityAllocatable); for full grants lower ceilings or give the store more member memory`,
        },
      ];
    });
  },
};

const zeroGrant: Check = {
  id: 'zero-grant',
  title: `Zero grant (${BindingCondition.QuotaGranted}=False: ${BindingReason.ZeroGranted}, ${BindingReason.NoLedgerEntry}, ${BindingReason.GrantNotExported})`,
  run(s) {
    return s.bindings.flatMap((b) => {
      const c = conditionOf(b, BindingCondition.QuotaGranted);
      // A contested domain has no grant of its own: the domain-claimed-twice row says why.
      const contested = conditionOf(b, BindingCondition.DomainExclusive)?.status === 'False';
      if (c?.status !== 'False' || b.metadata.deletionTimestamp || contested) return [];
      const pool = poolOf(s, b);
      const allocatable = pool && conditionOf(pool, PoolCondition.CapacityAllocatable);
      const nothing = allocatable?.reason === PoolReason.NothingToAllocate;
      return [
        {
          object: bindingObject(b),
          severity: c.reason === BindingReason.ZeroGranted ? ('error' as const) : ('warning' as const),
          summary:
            c.reason === BindingReason.ZeroGranted
              ? 'the store grants this domain nothing: every write under it fails'
              : 'the store reports no grant for this domain yet',
          evidence: [said(c), ...(allocatable ? [`pool ${pool!.metadata.name}: ${said(allocatable)}`] : [])],
          fix:
            c.reason !== BindingReason.ZeroGranted
              ? 'the next ledger pass (within 30 s) registers the domain; if it stays, see the ledger-unavailable row'
              : nothing
                ? `no member of backend ${pool!.spec.backends[0]} has mounted yet, or a restarted master is remounting (about 30 s): see the member-shortfall row`
                : 'a proportional recut left this domain no share: lower the other ceilings, or add capacity to the store',
        },
      ];
    });
  },
};

const domainClaimedTwice: Check = {
  id: 'domain-claimed-twice',
  title: `Domain claimed by two Bindings (${BindingCondition.DomainExclusive}=False)`,
  run(s) {
    return s.bindings.flatMap((b) => {
      const c = conditionOf(b, BindingCondition.DomainExclusive);
      if (c?.status !== 'False') return [];
      return [
        {
          object: bindingObject(b),
          severity: 'error' as const,
          summary: `domain ${b.spec.domain.name ?? 'default'} is claimed by another Binding on the same master; it is managed for neither`,
          evidence: [said(c)],
          fix: 'two creates raced past admission: delete one of the Bindings (the other then takes the domain)',
        },
      ];
    });
  },
};

function heldFix(reason: string, o: KVCacheBackend | KVCachePool | KVCachePoolBinding): string {
  const R = BindingReleasableReason;
  if (reason === R.HeldByWorkloads) return 'delete the ModelDeployments named first; the Binding then goes';
  if (reason === PoolReason.HeldByBindings) return 'delete the Bindings named first; the pool then goes';
  if (reason === BackendReason.InUse) return 'delete the pools named first; the backend then goes';
  if (reason === R.LedgerNotReleased && o.kind === 'KVCachePoolBinding')
    return `its domain holds data the store will not drop; to remove that data and finish the deletion: kubectl annotate kvcachepoolbinding ${o.metadata.name} -n ${o.metadata.namespace} ${purgeOnDeleteAnnotation}=true`;
  if (reason === R.LedgerNotReleased)
    return 'the store refuses to drop a domain that holds data; the operator retries every 30 s';
  if (reason === R.Purging)
    return 'its domain’s objects are being removed; objects read within their lease go once it ends (the operator retries every 5 s)';
  if (reason === R.PurgeUnsafeWithDiskTier)
    return "the store has a disk tier, where the master's removal of one domain empties other domains' files too: keep the Binding, or remove its finalizer as the message says (the data stays on the store)";
  return "the store did not answer the release: see the backend's LeaderAvailable; the operator retries";
}

const deletionHeld: Check = {
  id: 'deletion-held',
  title: `Deletion held (${BindingCondition.Releasable}=False, ${BackendCondition.Deletable}=False)`,
  run(s) {
    const held = [
      ...s.backends.map(
        (b) => [`KVCacheBackend/${b.metadata.name}`, b, conditionOf(b, BackendCondition.Deletable)] as const,
      ),
      ...s.pools.map((p) => [poolObject(p), p, conditionOf(p, PoolCondition.Releasable)] as const),
      ...s.bindings.map((b) => [bindingObject(b), b, conditionOf(b, BindingCondition.Releasable)] as const),
    ];
    return held.flatMap(([object, o, c]) => {
      if (!o.metadata.deletionTimestamp || c?.status !== 'False') return [];
      return [
        {
          object,
          severity: 'warning' as const,
          summary: `deleted at ${o.metadata.deletionTimestamp}, held`,
          evidence: [said(c)],
          fix: heldFix(c.reason, o),
        },
      ];
    });
  },
};

/** The image the backend's store runs: its serving leader's, else what it names, else the Setting's. */
function storeImage(s: Snapshot, b: KVCacheBackend): string | undefined {
  const leader = s.storePods.find(
    (p) =>
      p.metadata.labels?.[instanceLabel] === b.metadata.name &&
      p.metadata.labels?.[componentLabel] === leaderComponent &&
      p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'),
  ) as { spec?: { containers?: { image?: string }[] } } | undefined;
  return (
    leader?.spec?.containers?.[0]?.image ??
    b.spec.image ??
    s.settings.find((x) => x.metadata.name === 'kv-cache-backend-image')?.spec.value
  );
}

const versionMismatch: Check = {
  id: 'version-mismatch',
  title: 'Engine and store on different Mooncake lines (every write fails)',
  run(s) {
    const out: Finding[] = [];
    for (const m of s.deployments) {
      const ref = m.spec.kvCache?.poolRef.name;
      const binding =
        ref &&
        s.bindings.find((b) => b.metadata.namespace === m.metadata.namespace && b.metadata.name === ref);
      const pool = binding && poolOf(s, binding);
      const backend = pool && s.backends.find((b) => b.metadata.name === pool.spec.backends[0]);
      if (!backend || backend.spec.connection.external) continue;
      const version = engineVersion(m);
      const client = clientLine(m.spec.engine.name, version);
      const image = storeImage(s, backend);
      const store = image && storeLine(image);
      const object = `ModelDeployment/${m.metadata.namespace}/${m.metadata.name}`;
      const engine = `${m.spec.engine.name} ${version ?? '(version unknown)'}`;
      if (!client || !store) {
        out.push({
          object,
          severity: 'info',
          summary: `cannot compare: ${!client ? `no known store client line for ${engine}` : `no Mooncake version in the store image ${image ?? '(none)'}`}`,
          evidence: [],
          fix: "run a prompt through the engine once: a mismatch starts healthy, then fails every write (a vLLM deployment's CacheAttached turns False, CacheOperationsFailing; SGLang counts no failed write, its sglang:backuped_tokens_total stays still)",
        });
      } else if (client !== store) {
        out.push({
          object,
          severity: 'error',
          summary: `${engine} embeds the Mooncake ${client} client, but backend ${backend.metadata.name} runs the ${store} line`,
          evidence: [
            `engine: ${engine}, image ${m.spec.roles.find((r) => r.image)?.image ?? m.spec.engine.image ?? '(from spec.engine.version)'}`,
            `store: backend ${backend.metadata.name} runs ${image}`,
          ],
          fix: `serve it from a backend whose image is on the ${client} line (a second backend with spec.image, its own pool and Binding), or run an engine version whose client is on ${store}`,
        });
      }
    }
    return out;
  },
};

export const quotaChecks: Check[] = [
  poolBackend,
  ledgerUnavailable,
  oversubscription,
  zeroGrant,
  domainClaimedTwice,
  deletionHeld,
  versionMismatch,
];
