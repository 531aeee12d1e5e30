// `kubectl kvpool top` as data: per backend, what its master reports on /metrics now — capacity and
// lookups (hits and misses, which the store counts per master, not per domain), and per domain the
// usage, grant and requested ceiling, and the prompt tokens its engines loaded from the pool (from the
// Bindings' statuses, as the engines count them). A figure not reported stays absent, never 0. Pure.
import type { PoolPrefix } from '../api/pool-prefix.ts';
import type { KVCacheBackend, KVCachePoolBinding } from '../api/types.ts';
import { capacityFrom } from '../store/observe.ts';
import { type Families, gauge, parsePrometheusText } from '../store/prometheus.ts';
import { tenantFigures } from '../store/tenant-metrics.ts';
import { sumPoolPrefix } from '../vocabulary/pool-prefix.ts';
import type { Snapshot } from './snapshot.ts';
import { type FailoverNode, type Figure, failoverNode, figure } from './status-model.ts';

/** One read of a backend's /metrics: the text, or why it could not be read; `source` says from where. */
export type Scrape = { source: string; text: string } | { source?: string; error: string };

export interface Lookups {
  /** Existence checks (ExistKey requests and batched items): how engines look a prefix up. */
  existChecks?: number;
  /** GetReplicaList operations (total_get_nums_). */
  total?: number;
  /** Those that found a completed replica (valid_get_nums_). */
  hits?: number;
  misses?: number;
  memoryHits?: number;
  diskHits?: number;
}

export interface TopDomain {
  domain: string;
  /** The Bindings (namespace/name) that claim this domain on the backend. */
  bindings: string[];
  usage?: Figure;
  grant?: Figure;
  requested?: Figure;
  overQuota?: boolean;
  /** Prompt tokens the engines drawing on the domain's Bindings loaded from the pool. */
  poolPrefix?: PoolPrefix;
}

export interface TopBackend {
  backend: string;
  source?: string;
  error?: string;
  capacity?: { total: Figure; used: Figure };
  lookups: Lookups;
  /** The share of gets that found a replica, 0 to 1; absent without gets. */
  hitRate?: number;
  domains: TopDomain[];
  /** The last master change as the operator recorded it (status.lastFailover); absent when none was seen. */
  lastFailover?: FailoverNode;
}

function lookups(f: Families): Lookups {
  const total = gauge(f, 'total_get_nums_');
  const hits = gauge(f, 'valid_get_nums_');
  const out: Lookups = {};
  const checks = [
    gauge(f, 'master_exist_key_requests_total'),
    gauge(f, 'master_batch_exist_key_items_total'),
  ];
  if (checks.some((c) => c !== undefined)) out.existChecks = checks.reduce<number>((a, c) => a + (c ?? 0), 0);
  if (total !== undefined) out.total = total;
  if (hits !== undefined) out.hits = hits;
  if (total !== undefined && hits !== undefined) out.misses = total - hits;
  const memory = gauge(f, 'mem_cache_hit_nums_');
  const disk = gauge(f, 'file_cache_hit_nums_');
  if (memory !== undefined) out.memoryHits = memory;
  if (disk !== undefined) out.diskHits = disk;
  return out;
}

function domainsOf(s: Snapshot, backend: string): Map<string, KVCachePoolBinding[]> {
  const pools = new Set(s.pools.filter((p) => p.spec.backends[0] === backend).map((p) => p.metadata.name));
  const out = new Map<string, KVCachePoolBinding[]>();
  for (const b of s.bindings.filter((x) => pools.has(x.spec.poolRef.name))) {
    const d = b.spec.domain.name ?? 'default';
    out.set(d, [...(out.get(d) ?? []), b]);
  }
  return out;
}

/** The domain's Bindings as namespace/name, and what their engines report. */
function claimants(bindings: KVCachePoolBinding[] = []) {
  const poolPrefix = sumPoolPrefix(bindings.map((b) => b.status?.poolPrefix));
  return {
    bindings: bindings.map((b) => `${b.metadata.namespace}/${b.metadata.name}`),
    ...(poolPrefix ? { poolPrefix } : {}),
  };
}

const withFigure = (key: string, n: bigint | undefined) =>
  n === undefined ? {} : { [key]: figure(n.toString()) };

function topBackend(s: Snapshot, b: KVCacheBackend, scrape: Scrape | undefined): TopBackend {
  const name = b.metadata.name!;
  const claimed = domainsOf(s, name);
  const lastFailover = failoverNode(b.status?.lastFailover);
  const base = {
    backend: name,
    ...(scrape?.source ? { source: scrape.source } : {}),
    ...(lastFailover ? { lastFailover } : {}),
  };
  if (!scrape || 'error' in scrape) {
    return {
      ...base,
      error: scrape?.error ?? 'no serving leader to read',
      lookups: {},
      domains: [...claimed.keys()].sort().map((domain) => ({ domain, ...claimants(claimed.get(domain)) })),
    };
  }
  const f = parsePrometheusText(scrape.text);
  const managedWithoutTier = Boolean(
    b.spec.connection.managed && !b.spec.connection.managed.members.some((g) => g.localDisks?.length),
  );
  const cap = capacityFrom(f, !managedWithoutTier);
  const tenants = tenantFigures(f);
  const names = [...new Set([...claimed.keys(), ...tenants.keys()])].sort();
  const l = lookups(f);
  return {
    ...base,
    ...(cap
      ? { capacity: { total: figure(cap.total.toString())!, used: figure(cap.used.toString())! } }
      : {}),
    lookups: l,
    ...(l.total ? { hitRate: (l.hits ?? 0) / l.total } : {}),
    domains: names.map((domain) => {
      const t = tenants.get(domain);
      return {
        domain,
        ...claimants(claimed.get(domain)),
        ...withFigure('usage', t?.usageBytes),
        ...withFigure('grant', t?.effectiveBytes),
        ...withFigure('requested', t?.requestedBytes),
        ...(t?.overQuota !== undefined ? { overQuota: t.overQuota } : {}),
      };
    }),
  };
}

export function topModel(s: Snapshot, scrapes: Map<string, Scrape>): TopBackend[] {
  return s.backends.map((b) => topBackend(s, b, scrapes.get(b.metadata.name!)));
}
