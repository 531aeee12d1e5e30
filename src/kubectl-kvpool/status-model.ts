// `kubectl kvpool status` as data: one tree per backend → pools → Bindings → ModelDeployments, with
// the figures the operator derived from the store, the elected leader, the members per node, and what
// is wrong, in the operator's own words (the condition messages). Pure.
import { conditionOf } from '../api/conditions.ts';
import { type LastFailover, RolloutCompleteReason } from '../api/kvcache-backend.ts';
import { BackendCondition } from '../api/kvcache-backend-conditions.ts';
import { PoolReason } from '../api/kvcache-pool-conditions.ts';
import type { PoolPrefix } from '../api/pool-prefix.ts';
import type { Condition } from '../api/schema.ts';
import type { KVCacheBackend, KVCachePool, KVCachePoolBinding, ModelDeployment } from '../api/types.ts';
import { viewPod } from '../controllers/backend/pod-view.ts';
import { warmSeconds } from '../controllers/backend/status-failover.ts';
import { formatQuantity } from '../kube/readable-quantity.ts';
import { parseQuantityBytes } from '../vocabulary/quantity.ts';
import { componentLabel, instanceLabel, leaderComponent } from '../vocabulary/store-objects.ts';
import { podFault } from './pod-fault.ts';
import type { Pod, Snapshot } from './snapshot.ts';

/** A byte figure: exact (for scripts) and as people write it. */
export interface Figure {
  bytes: string;
  display: string;
}

export interface MemberNode {
  node: string;
  pod?: string;
  ready: boolean;
  /** The segment's state as the master lists it; absent when the master lists none for the node. */
  segment?: string;
  fault?: string;
}

export interface LeaderNode {
  /** The Lease's holder (the serving master's address); absent when nobody holds it. */
  holder?: string;
  pod?: string;
  node?: string;
  replicas: number;
  ready: number;
}

export interface MdNode {
  namespace: string;
  name: string;
  phase?: string;
  engine: string;
  roles?: string;
  cache?: string;
  /** Whether it draws on a Binding (only then are tokens served from the pool). */
  usesPool: boolean;
  /** Prompt tokens its ready replicas loaded from the pool, as they count them; absent when not reported. */
  poolPrefix?: PoolPrefix;
  problems: string[];
}

export interface BindingNode {
  namespace: string;
  name: string;
  domain: string;
  phase?: string;
  ceiling: Figure;
  effective?: Figure;
  usage?: Figure;
  overQuota?: boolean;
  /** Prompt tokens its ModelDeployments' engines loaded from the pool; absent when not reported. */
  poolPrefix?: PoolPrefix;
  problems: string[];
  notes: string[];
  deployments: MdNode[];
}

export interface PoolNode {
  name: string;
  phase?: string;
  quota: Figure;
  usage?: Figure;
  problems: string[];
  notes: string[];
  bindings: BindingNode[];
}

/** status.lastFailover with its byte figures readable, and the seconds from the new master to warm. */
export interface FailoverNode {
  at: string;
  master: string;
  dramKeysBefore?: number;
  dramBytesBefore?: Figure;
  dramKeysAfter?: number;
  dramBytesAfter?: Figure;
  tierObjectsBefore?: number;
  tierBytesBefore?: Figure;
  reRegisteredObjects?: number;
  reRegisteredBytes?: Figure;
  warmAt?: string;
  warmSeconds?: number;
}

export interface BackendNode {
  name: string;
  phase?: string;
  managed: boolean;
  endpoint?: string;
  capacity?: { total: Figure; used?: Figure };
  leader?: LeaderNode;
  /** The last master change and what the members re-registered; absent when none was seen. */
  lastFailover?: FailoverNode;
  members: MemberNode[];
  problems: string[];
  notes: string[];
  pools: PoolNode[];
}

export interface StatusModel {
  backends: BackendNode[];
  /** Pools whose backend does not exist, and Bindings whose pool does not exist. */
  unattached: { pools: PoolNode[]; bindings: BindingNode[] };
}

export function figure(q: string | number | undefined): Figure | undefined {
  if (q === undefined) return undefined;
  const bytes = parseQuantityBytes(q);
  return { bytes: bytes.toString(), display: formatQuantity(bytes) };
}

export function failoverNode(f: LastFailover | undefined): FailoverNode | undefined {
  if (!f) return undefined;
  const seconds = warmSeconds(f);
  const before = figure(f.tierBytesBefore);
  const back = figure(f.reRegisteredBytes);
  const [dramBefore, dramAfter] = [figure(f.dramBytesBefore), figure(f.dramBytesAfter)];
  return {
    at: f.at,
    master: f.master,
    ...(f.dramKeysBefore !== undefined ? { dramKeysBefore: f.dramKeysBefore } : {}),
    ...(dramBefore ? { dramBytesBefore: dramBefore } : {}),
    ...(f.dramKeysAfter !== undefined ? { dramKeysAfter: f.dramKeysAfter } : {}),
    ...(dramAfter ? { dramBytesAfter: dramAfter } : {}),
    ...(f.tierObjectsBefore !== undefined ? { tierObjectsBefore: f.tierObjectsBefore } : {}),
    ...(before ? { tierBytesBefore: before } : {}),
    ...(f.reRegisteredObjects !== undefined ? { reRegisteredObjects: f.reRegisteredObjects } : {}),
    ...(back ? { reRegisteredBytes: back } : {}),
    ...(f.warmAt ? { warmAt: f.warmAt } : {}),
    ...(seconds !== undefined ? { warmSeconds: seconds } : {}),
  };
}

const conditionText = (c: Condition) => `${c.type}=${c.status} (${c.reason}): ${c.message}`;

/** With replicated metadata, the True verdicts worth a line: who follows the OpLog, etcd's quorum. */
function replicationNotes(conditions: Condition[] | undefined): string[] {
  const types: string[] = [BackendCondition.MetadataReplicated, BackendCondition.EtcdAvailable];
  return (conditions ?? []).filter((c) => types.includes(c.type) && c.status === 'True').map(conditionText);
}

/** Conditions of `types` that are not True, in words; a message already given is not repeated. */
function notTrue(conditions: Condition[] | undefined, types: string[], skip: (c: Condition) => boolean) {
  const out: string[] = [];
  const said = new Set<string>();
  for (const c of conditions ?? []) {
    if (!types.includes(c.type) || c.status === 'True' || skip(c) || said.has(c.message)) continue;
    said.add(c.message);
    out.push(conditionText(c));
  }
  return out;
}

const informational = (c: Condition) =>
  (c.type === 'QuotaWithinTotal' && c.reason === PoolReason.Oversubscribed) ||
  c.reason === PoolReason.MultiTenancyDisabled ||
  (c.type === 'RolloutComplete' && c.status !== 'False') ||
  c.reason === RolloutCompleteReason.Progressing ||
  c.reason === RolloutCompleteReason.ReplicasPending;

function backendPods(s: Snapshot, backend: string): Pod[] {
  return s.storePods.filter((p) => p.metadata.labels?.[instanceLabel] === backend);
}

function leaderOf(s: Snapshot, b: KVCacheBackend): LeaderNode | undefined {
  if (!b.spec.connection.managed) return undefined;
  const pods = backendPods(s, b.metadata.name!).filter(
    (p) => p.metadata.labels?.[componentLabel] === leaderComponent && !p.metadata.deletionTimestamp,
  );
  const holder =
    s.leases.find((l) => l.metadata.name === `${b.metadata.name}-leader`)?.spec?.holderIdentity || undefined;
  const views = pods.map((p) => viewPod(p, 'Leader'));
  const serving =
    (holder && views.find((v) => v.podIP && holder.startsWith(`${v.podIP}:`))) ?? views.find((v) => v.ready);
  return {
    ...(holder ? { holder } : {}),
    ...(serving ? { pod: serving.name, ...(serving.nodeName ? { node: serving.nodeName } : {}) } : {}),
    replicas: views.length,
    ready: views.filter((v) => v.ready).length,
  };
}

function membersOf(s: Snapshot, b: KVCacheBackend): MemberNode[] {
  const pods = backendPods(s, b.metadata.name!)
    .filter((p) => p.metadata.labels?.[componentLabel]?.startsWith('member-'))
    .map((p) => podFault(s, p, 'Member'));
  const rows = b.status?.members ?? [];
  const nodes = new Set([
    ...pods.map((p) => p.nodeName ?? '(unscheduled)'),
    ...rows.map((r) => r.nodeName ?? '(no Pod)'),
  ]);
  return [...nodes].sort().map((node) => {
    const pod = pods.find((p) => (p.nodeName ?? '(unscheduled)') === node);
    const segment = rows.find((r) => (r.nodeName ?? '(no Pod)') === node)?.state;
    return {
      node,
      ...(pod ? { pod: pod.name } : {}),
      ready: pod?.ready ?? false,
      ...(segment ? { segment } : {}),
      ...(pod?.fault ? { fault: `${pod.fault.reason}: ${pod.fault.message}` } : {}),
    };
  });
}

function deploymentNode(m: ModelDeployment): MdNode {
  const cache = conditionOf(m, 'CacheAttached');
  return {
    namespace: m.metadata.namespace!,
    name: m.metadata.name!,
    ...(m.status?.phase ? { phase: m.status.phase } : {}),
    engine: m.spec.engine.name,
    ...(m.status?.roleSummary ? { roles: m.status.roleSummary } : {}),
    ...(cache ? { cache: `CacheAttached=${cache.status} (${cache.reason})` } : {}),
    usesPool: Boolean(m.spec.kvCache),
    ...(m.status?.poolPrefix ? { poolPrefix: m.status.poolPrefix } : {}),
    problems: notTrue(
      m.status?.conditions,
      ['DomainRegistered', 'CacheAttached'],
      (c) => c.status !== 'False',
    ),
  };
}

function bindingNode(s: Snapshot, b: KVCachePoolBinding): BindingNode {
  const st = b.status ?? {};
  const conditions = st.conditions;
  return {
    namespace: b.metadata.namespace!,
    name: b.metadata.name!,
    domain: b.spec.domain.name ?? 'default',
    ...(st.phase ? { phase: st.phase } : {}),
    ceiling: figure(b.spec.quota.ceiling)!,
    ...(st.effectiveQuota !== undefined ? { effective: figure(st.effectiveQuota) } : {}),
    ...(st.usage !== undefined ? { usage: figure(st.usage) } : {}),
    ...(st.overQuota !== undefined ? { overQuota: st.overQuota } : {}),
    ...(st.poolPrefix ? { poolPrefix: st.poolPrefix } : {}),
    problems: notTrue(
      conditions,
      ['DomainExclusive', 'QuotaObserved', 'QuotaGranted', 'Releasable'],
      (c) => c.status === 'Unknown',
    ),
    notes: st.overQuota
      ? ['the domain holds more than its grant (a recut put the grant below its usage)']
      : [],
    deployments: s.deployments
      .filter(
        (m) =>
          m.metadata.namespace === b.metadata.namespace && m.spec.kvCache?.poolRef.name === b.metadata.name,
      )
      .map(deploymentNode),
  };
}

function poolNode(s: Snapshot, p: KVCachePool): PoolNode {
  const conditions = p.status?.conditions;
  const types = ['BackendResolved', 'QuotaLedgerAvailable', 'QuotaPolicyWritable', 'CapacityAllocatable'];
  return {
    name: p.metadata.name!,
    ...(p.status?.phase ? { phase: p.status.phase } : {}),
    quota: figure(p.spec.quota.total)!,
    ...(p.status?.usage?.total !== undefined ? { usage: figure(p.status.usage.total) } : {}),
    problems: notTrue(conditions, [...types, 'Releasable'], informational),
    notes: notTrue(conditions, [...types, 'QuotaWithinTotal'], (c) => !informational(c)),
    bindings: s.bindings.filter((b) => b.spec.poolRef.name === p.metadata.name).map((b) => bindingNode(s, b)),
  };
}

function backendNode(s: Snapshot, b: KVCacheBackend): BackendNode {
  const st = b.status ?? {};
  const types = ['LeaderAvailable', 'CapacityObserved', 'MembersMounted', 'PoolWrites', 'ElectionObserved'];
  const problems = notTrue(
    st.conditions,
    [
      ...types,
      'TierWasEmpty',
      BackendCondition.TierWritable,
      BackendCondition.MetadataReplicated,
      BackendCondition.EtcdAvailable,
      ...(b.metadata.deletionTimestamp ? ['Deletable'] : []),
    ],
    (c) => c.status === 'Unknown' || informational(c),
  );
  const total = figure(st.capacity?.total);
  const leader = leaderOf(s, b);
  const lastFailover = failoverNode(st.lastFailover);
  return {
    name: b.metadata.name!,
    ...(st.phase ? { phase: st.phase } : {}),
    managed: Boolean(b.spec.connection.managed),
    ...(st.endpoints?.find((e) => e.name === 'Client')
      ? { endpoint: st.endpoints.find((e) => e.name === 'Client')!.address }
      : {}),
    ...(total
      ? {
          capacity: { total, ...(st.capacity?.used !== undefined ? { used: figure(st.capacity.used) } : {}) },
        }
      : {}),
    ...(leader ? { leader } : {}),
    ...(lastFailover ? { lastFailover } : {}),
    members: membersOf(s, b),
    problems,
    notes: [
      ...notTrue(st.conditions, ['RolloutComplete'], (c) => c.status === 'True'),
      ...replicationNotes(st.conditions),
    ],
    pools: s.pools.filter((p) => p.spec.backends[0] === b.metadata.name).map((p) => poolNode(s, p)),
  };
}

export function statusModel(s: Snapshot): StatusModel {
  const backendNames = new Set(s.backends.map((b) => b.metadata.name));
  const poolNames = new Set(s.pools.map((p) => p.metadata.name));
  return {
    backends: s.backends.map((b) => backendNode(s, b)),
    unattached: {
      pools: s.pools.filter((p) => !backendNames.has(p.spec.backends[0])).map((p) => poolNode(s, p)),
      bindings: s.bindings.filter((b) => !poolNames.has(b.spec.poolRef.name)).map((b) => bindingNode(s, b)),
    },
  };
}
