// kvpool's own figures as metrics, read from the statuses the controllers wrote (what the store and
// the engines reported): per-backend capacity, last failover and metadata replication, per-pool quota and usage, per-Binding ceiling, grant
// and usage, prompt tokens served from the pool per ModelDeployment and per Binding, and each object's
// phase. Only the replica that runs the controllers reports them, so a standby
// never doubles a sum; a figure the status does not carry has no sample (absent is not zero).
import { Gauge } from 'prom-client';
import type { LastFailover } from '../api/kvcache-backend.ts';
import { BackendCondition } from '../api/kvcache-backend-conditions.ts';
import type { PoolPrefix } from '../api/pool-prefix.ts';
import type { KVCacheBackend, KVCachePool, KVCachePoolBinding, ModelDeployment } from '../api/types.ts';
import type { InformerFactory } from '../kube/informer-factory.ts';
import { registry } from '../kube/metrics.ts';
import { workerApiVersion } from '../vocabulary/identity.ts';
import { parseQuantityBytes } from '../vocabulary/quantity.ts';
import { warmSeconds } from './backend/status-failover.ts';

export interface FigureSample {
  metric: string;
  labels: Record<string, string>;
  value: number;
}

export interface FigureObjects {
  backends: KVCacheBackend[];
  pools: KVCachePool[];
  bindings: KVCachePoolBinding[];
  deployments?: ModelDeployment[];
}

const help: Record<string, string> = {
  kvpool_backend_capacity_bytes:
    'Bytes the store can hold, as its master reports them (status.capacity.total).',
  kvpool_backend_used_bytes: 'Bytes of the store allocated to objects (status.capacity.used).',
  kvpool_backend_segments: "Segments the store's master lists (status.members).",
  kvpool_backend_failover_timestamp_seconds:
    'When the operator first read a new master serving, in seconds since the epoch (status.lastFailover.at).',
  kvpool_backend_failover_reregistered_objects:
    'Objects the members re-registered from their disk tiers with the new master (status.lastFailover.reRegisteredObjects).',
  kvpool_backend_failover_reregistered_bytes:
    'Bytes of those objects (status.lastFailover.reRegisteredBytes).',
  kvpool_backend_failover_warm_seconds:
    'Seconds from the new master to the end of the re-registration (status.lastFailover.warmAt minus at); no sample until warm.',
  kvpool_backend_tier_writable:
    "1 while the members' disk tiers take the store's writes, 0 while a member's writes fail or its tier filesystem has no room for a bucket (status condition TierWritable); no sample while not observed.",
  kvpool_backend_failover_dram_keys_before:
    'Objects in memory the previous master last reported before the last master change (status.lastFailover.dramKeysBefore).',
  kvpool_backend_failover_dram_keys_after:
    'Objects in memory the new master reported after it (status.lastFailover.dramKeysAfter): as many as before with replicated metadata, 0 without.',
  kvpool_backend_metadata_replicated:
    '1 while a standby follows the serving master’s OpLog, 0 while none does or the nearest lags (condition MetadataReplicated); no sample without replicated metadata.',
  kvpool_backend_oplog_lag_entries:
    'OpLog entries the nearest standby is behind the primary (status.replication.lagEntries).',
  kvpool_backend_etcd_healthy_members:
    "Members of the store's etcd whose /health answered true (status.replication.etcdHealthy).",
  kvpool_backend_etcd_members:
    'Members of the etcd the operator runs for the store (status.replication.etcdMembers).',
  kvpool_pool_quota_bytes: "The pool's quota.total.",
  kvpool_pool_usage_bytes: "Bytes the pool's domains hold on the store (status.usage.total).",
  kvpool_binding_ceiling_bytes: "The Binding's quota.ceiling.",
  kvpool_binding_effective_quota_bytes: 'What the store grants the Binding’s domain (status.effectiveQuota).',
  kvpool_binding_usage_bytes: 'Bytes the Binding’s domain holds on the store (status.usage).',
  kvpool_binding_pool_prefix_hit_tokens:
    "Prompt tokens the engines of the Binding's ModelDeployments loaded from the pool (status.poolPrefix.hitTokens).",
  kvpool_binding_pool_prefix_queried_tokens:
    "Prompt tokens the engines of the Binding's ModelDeployments looked up in the pool (status.poolPrefix.queriedTokens).",
  kvpool_binding_pool_prefix_hit_ratio:
    'Share of those looked-up tokens served from the pool (status.poolPrefix.hitRatio).',
  kvpool_modeldeployment_pool_prefix_hit_tokens:
    "Prompt tokens the deployment's ready replicas loaded from the pool (status.poolPrefix.hitTokens).",
  kvpool_modeldeployment_pool_prefix_queried_tokens:
    "Prompt tokens the deployment's ready replicas looked up in the pool (status.poolPrefix.queriedTokens).",
  kvpool_modeldeployment_pool_prefix_hit_ratio:
    'Share of those looked-up tokens served from the pool (status.poolPrefix.hitRatio).',
  kvpool_object_phase: 'Each backend, pool and Binding by phase: 1 for its current phase.',
};

const ratioOf = (r: string | undefined) => (r === undefined ? undefined : Number(r));

const bytesOf = (q: string | number | undefined) =>
  q === undefined ? undefined : Number(parseQuantityBytes(q));

type Push = (metric: string, labels: Record<string, string>, value: number | undefined) => void;

function failoverFigures(push: Push, labels: Record<string, string>, f: LastFailover | undefined) {
  if (!f) return;
  push('kvpool_backend_failover_timestamp_seconds', labels, Date.parse(f.at) / 1000);
  push('kvpool_backend_failover_reregistered_objects', labels, f.reRegisteredObjects);
  push('kvpool_backend_failover_reregistered_bytes', labels, bytesOf(f.reRegisteredBytes));
  push('kvpool_backend_failover_warm_seconds', labels, warmSeconds(f));
  push('kvpool_backend_failover_dram_keys_before', labels, f.dramKeysBefore);
  push('kvpool_backend_failover_dram_keys_after', labels, f.dramKeysAfter);
}

function replicationFigures(push: Push, labels: Record<string, string>, b: KVCacheBackend) {
  push('kvpool_backend_metadata_replicated', labels, conditionValue(b, BackendCondition.MetadataReplicated));
  push('kvpool_backend_oplog_lag_entries', labels, b.status?.replication?.lagEntries);
  push('kvpool_backend_etcd_healthy_members', labels, b.status?.replication?.etcdHealthy);
  push('kvpool_backend_etcd_members', labels, b.status?.replication?.etcdMembers);
}

/** A condition as 1 (True) or 0 (False); Unknown or absent gives no sample. */
function conditionValue(b: KVCacheBackend, type: string): number | undefined {
  const status = b.status?.conditions?.find((c) => c.type === type)?.status;
  return status === 'True' ? 1 : status === 'False' ? 0 : undefined;
}

/** The samples these objects' statuses give. Pure. */
export function figureSamples(o: FigureObjects): FigureSample[] {
  const out: FigureSample[] = [];
  const push: Push = (metric, labels, value) => {
    if (value !== undefined && Number.isFinite(value)) out.push({ metric, labels, value });
  };
  const prefix = (kind: string, labels: Record<string, string>, p: PoolPrefix | undefined) => {
    push(`${kind}_pool_prefix_hit_tokens`, labels, p?.hitTokens);
    push(`${kind}_pool_prefix_queried_tokens`, labels, p?.queriedTokens);
    push(`${kind}_pool_prefix_hit_ratio`, labels, ratioOf(p?.hitRatio));
  };
  const phase = (kind: string, namespace: string, name: string, p: string | undefined) =>
    push('kvpool_object_phase', { kind, namespace, name, phase: p ?? 'Unknown' }, 1);
  for (const b of o.backends) {
    const labels = { backend: b.metadata.name! };
    push('kvpool_backend_capacity_bytes', labels, bytesOf(b.status?.capacity?.total));
    push('kvpool_backend_used_bytes', labels, bytesOf(b.status?.capacity?.used));
    push('kvpool_backend_segments', labels, b.status?.members?.length);
    failoverFigures(push, labels, b.status?.lastFailover);
    push('kvpool_backend_tier_writable', labels, conditionValue(b, BackendCondition.TierWritable));
    replicationFigures(push, labels, b);
    phase('KVCacheBackend', '', b.metadata.name!, b.status?.phase);
  }
  for (const p of o.pools) {
    const labels = { pool: p.metadata.name!, backend: p.spec.backends[0] ?? '' };
    push('kvpool_pool_quota_bytes', labels, bytesOf(p.spec.quota.total));
    push('kvpool_pool_usage_bytes', labels, bytesOf(p.status?.usage?.total));
    phase('KVCachePool', '', p.metadata.name!, p.status?.phase);
  }
  for (const b of o.bindings) {
    const labels = {
      namespace: b.metadata.namespace!,
      binding: b.metadata.name!,
      pool: b.spec.poolRef.name,
      domain: b.spec.domain.name ?? 'default',
    };
    push('kvpool_binding_ceiling_bytes', labels, bytesOf(b.spec.quota.ceiling));
    push('kvpool_binding_effective_quota_bytes', labels, bytesOf(b.status?.effectiveQuota));
    push('kvpool_binding_usage_bytes', labels, bytesOf(b.status?.usage));
    prefix('kvpool_binding', labels, b.status?.poolPrefix);
    phase('KVCachePoolBinding', b.metadata.namespace!, b.metadata.name!, b.status?.phase);
  }
  for (const m of o.deployments ?? []) {
    if (!m.spec.kvCache) continue;
    const labels = {
      namespace: m.metadata.namespace!,
      modeldeployment: m.metadata.name!,
      binding: m.spec.kvCache.poolRef.name,
    };
    prefix('kvpool_modeldeployment', labels, m.status?.poolPrefix);
  }
  return out;
}

const labelNames: Record<string, string[]> = {
  kvpool_backend_capacity_bytes: ['backend'],
  kvpool_backend_used_bytes: ['backend'],
  kvpool_backend_segments: ['backend'],
  kvpool_backend_failover_timestamp_seconds: ['backend'],
  kvpool_backend_failover_reregistered_objects: ['backend'],
  kvpool_backend_failover_reregistered_bytes: ['backend'],
  kvpool_backend_failover_warm_seconds: ['backend'],
  kvpool_backend_tier_writable: ['backend'],
  kvpool_backend_failover_dram_keys_before: ['backend'],
  kvpool_backend_failover_dram_keys_after: ['backend'],
  kvpool_backend_metadata_replicated: ['backend'],
  kvpool_backend_oplog_lag_entries: ['backend'],
  kvpool_backend_etcd_healthy_members: ['backend'],
  kvpool_backend_etcd_members: ['backend'],
  kvpool_pool_quota_bytes: ['pool', 'backend'],
  kvpool_pool_usage_bytes: ['pool', 'backend'],
  kvpool_binding_ceiling_bytes: ['namespace', 'binding', 'pool', 'domain'],
  kvpool_binding_effective_quota_bytes: ['namespace', 'binding', 'pool', 'domain'],
  kvpool_binding_usage_bytes: ['namespace', 'binding', 'pool', 'domain'],
  kvpool_binding_pool_prefix_hit_tokens: ['namespace', 'binding', 'pool', 'domain'],
  kvpool_binding_pool_prefix_queried_tokens: ['namespace', 'binding', 'pool', 'domain'],
  kvpool_binding_pool_prefix_hit_ratio: ['namespace', 'binding', 'pool', 'domain'],
  kvpool_modeldeployment_pool_prefix_hit_tokens: ['namespace', 'modeldeployment', 'binding'],
  kvpool_modeldeployment_pool_prefix_queried_tokens: ['namespace', 'modeldeployment', 'binding'],
  kvpool_modeldeployment_pool_prefix_hit_ratio: ['namespace', 'modeldeployment', 'binding'],
  kvpool_object_phase: ['kind', 'namespace', 'name', 'phase'],
};

let source: { objects: () => FigureObjects; leading: () => boolean } | undefined;

for (const [name, labels] of Object.entries(labelNames)) {
  new Gauge({
    name,
    help: help[name]!,
    labelNames: labels,
    registers: [registry],
    collect() {
      this.reset();
      if (!source?.leading()) return;
      for (const s of figureSamples(source.objects())) if (s.metric === name) this.set(s.labels, s.value);
    },
  });
}

/** Reports the figures of the objects these informers hold while `leading` says this replica leads. */
export function reportFigures(informers: InformerFactory, leading: () => boolean): void {
  const backends = informers.get<KVCacheBackend>({ apiVersion: workerApiVersion, kind: 'KVCacheBackend' });
  const pools = informers.get<KVCachePool>({ apiVersion: workerApiVersion, kind: 'KVCachePool' });
  const bindings = informers.get<KVCachePoolBinding>({
    apiVersion: workerApiVersion,
    kind: 'KVCachePoolBinding',
  });
  const deployments = informers.get<ModelDeployment>({
    apiVersion: workerApiVersion,
    kind: 'ModelDeployment',
  });
  source = {
    leading,
    objects: () => ({
      backends: backends.list(),
      pools: pools.list(),
      bindings: bindings.list(),
      deployments: deployments.list(),
    }),
  };
}
