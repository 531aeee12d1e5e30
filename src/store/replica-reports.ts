// What engine replicas report about the store, read from their own /metrics under the names real
// engines export (docs/decisions/0027-engine-observation-contract.md): vLLM's MooncakeStoreConnector
// counters and external prefix-cache counters, SGLang's HiCache storage counters. A figure no replica
// exports stays absent, never 0.
import { request } from 'undici';
import { type Families, parsePrometheusText } from './prometheus.ts';

/** What one replica, or several summed, reported. Every field is absent when nothing exported it. */
export interface CacheReports {
  /** Keys written to the store: vLLM's save_put keys on ok or partial_failure operations, less their failed keys. */
  storedKeys?: number;
  /** Keys read from the store: vLLM's load_get keys on ok or partial_failure operations, less their failed keys. */
  loadedKeys?: number;
  /** Keys that failed, in every operation: failed keys, or all keys of an operation that raised (status error). */
  failedKeys?: number;
  /** Store operations of every kind and outcome (vLLM). */
  operations?: number;
  /** Tokens SGLang's HiCache backed up to the store. */
  storedTokens?: number;
  /** Tokens SGLang's HiCache prefetched from the store. */
  loadedTokens?: number;
  /** Prompt tokens looked up in the pool (vLLM's external prefix cache queries). */
  prefixQueriedTokens?: number;
  /** Prompt tokens served from the pool: vLLM's external prefix cache hits, SGLang's prefetched tokens. */
  prefixHitTokens?: number;
}

export const vllmFamilies = {
  operations: 'vllm:mooncake_store_operation_total',
  keys: 'vllm:mooncake_store_operation_keys_total',
  failedKeys: 'vllm:mooncake_store_operation_failed_keys_total',
  prefixQueries: 'vllm:external_prefix_cache_queries_total',
  prefixHits: 'vllm:external_prefix_cache_hits_total',
} as const;

export const sglangFamilies = {
  backedUp: 'sglang:backuped_tokens_total',
  prefetched: 'sglang:prefetched_tokens_total',
} as const;

const succeeded = new Set(['ok', 'partial_failure']);

/** A series' identity: its labels in a stable order. */
const seriesKey = (labels: Record<string, string>) =>
  JSON.stringify(Object.entries(labels).sort(([a], [b]) => (a < b ? -1 : 1)));

const sum = (f: Families, name: string, keep: (l: Record<string, string>) => boolean = () => true) => {
  const samples = (f.get(name) ?? []).filter((s) => keep(s.labels) && Number.isFinite(s.value));
  return samples.length ? samples.reduce((a, s) => a + s.value, 0) : undefined;
};

function vllmStore(f: Families): CacheReports {
  const keys = f.get(vllmFamilies.keys) ?? [];
  const failed = new Map((f.get(vllmFamilies.failedKeys) ?? []).map((s) => [seriesKey(s.labels), s.value]));
  if (!keys.length && !failed.size && !f.get(vllmFamilies.operations)?.length) return {};
  const out = {
    storedKeys: 0,
    loadedKeys: 0,
    failedKeys: 0,
    operations: sum(f, vllmFamilies.operations) ?? 0,
  };
  const seen = new Set<string>();
  for (const s of keys) {
    const id = seriesKey(s.labels);
    seen.add(id);
    const lost = failed.get(id) ?? 0;
    const { operation, status } = s.labels;
    // An operation that raised counts every key as failed; vLLM records them so, older builds did not.
    out.failedKeys += status === 'error' ? Math.max(lost, s.value) : lost;
    if (!status || !succeeded.has(status)) continue;
    if (operation === 'save_put') out.storedKeys += Math.max(0, s.value - lost);
    else if (operation === 'load_get') out.loadedKeys += Math.max(0, s.value - lost);
  }
  for (const [id, lost] of failed) if (!seen.has(id)) out.failedKeys += lost;
  return out;
}

// Each tensor-, pipeline- and context-parallel rank counts the same tokens under its own labels: one is read.
const firstRank = (l: Record<string, string>) =>
  ['tp_rank', 'pp_rank', 'attn_cp_rank'].every((k) => l[k] === undefined || l[k] === '0');

function sglangStorage(f: Families): CacheReports {
  const stored = sum(f, sglangFamilies.backedUp, firstRank);
  const loaded = sum(f, sglangFamilies.prefetched, firstRank);
  if (stored === undefined && loaded === undefined) return {};
  // SGLang creates both counters together and exports each from its first increment: absent is 0 here.
  return { storedTokens: stored ?? 0, loadedTokens: loaded ?? 0, prefixHitTokens: loaded ?? 0 };
}

/** What one replica's /metrics says about the store; {} when it exports none of these families. */
export function replicaReportOf(f: Families): CacheReports {
  const queries = sum(f, vllmFamilies.prefixQueries);
  const hits = sum(f, vllmFamilies.prefixHits);
  return {
    ...vllmStore(f),
    ...sglangStorage(f),
    ...(queries !== undefined ? { prefixQueriedTokens: queries } : {}),
    ...(hits !== undefined ? { prefixHitTokens: hits } : {}),
  };
}

const fields = [
  'storedKeys',
  'loadedKeys',
  'failedKeys',
  'operations',
  'storedTokens',
  'loadedTokens',
  'prefixQueriedTokens',
  'prefixHitTokens',
] as const satisfies readonly (keyof CacheReports)[];

export type ReportField = (typeof fields)[number];
export const reportFields: readonly ReportField[] = fields;

/** The reports added field by field; a field none of them carries stays absent. */
export function sumReports(reports: Iterable<CacheReports>): CacheReports {
  const out: CacheReports = {};
  for (const r of reports) for (const k of fields) if (r[k] !== undefined) out[k] = (out[k] ?? 0) + r[k]!;
  return out;
}

export const reportedAnything = (r: CacheReports) => fields.some((k) => r[k] !== undefined);

/** One /metrics read per endpoint; an endpoint that does not answer with 200 is left out. */
export async function readReplicaReports(
  endpoints: string[],
  timeoutMs = 2000,
): Promise<Map<string, CacheReports>> {
  const out = new Map<string, CacheReports>();
  await Promise.all(
    endpoints.map(async (endpoint) => {
      try {
        const res = await request(`http://${endpoint}/metrics`, {
          headersTimeout: timeoutMs,
          bodyTimeout: timeoutMs,
        });
        if (res.statusCode !== 200) return void (await res.body.dump());
        out.set(endpoint, replicaReportOf(parsePrometheusText(await res.body.text())));
      } catch {
        // A replica that does not answer reports nothing this time.
      }
    }),
  );
  return out;
}
