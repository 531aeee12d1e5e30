// Prompt tokens served from the pool, as status.poolPrefix carries them: the engines' own token counts,
// and their ratio written as the status's hit-rate strings. Absent is not zero throughout.
import type { PoolPrefix } from '../api/pool-prefix.ts';

/** hits / queries with up to four decimals ("0.4213", "1"); undefined without queries. */
export function hitRatio(hits: number | undefined, queries: number | undefined): string | undefined {
  if (hits === undefined || !queries || queries <= 0) return undefined;
  const r = Math.min(1, Math.max(0, hits / queries));
  return String(Math.round(r * 10_000) / 10_000);
}

/**
 * The status figure from token counts; undefined when neither was reported. The ratio divides the
 * hits of the engines that count their queries (`queriedHits`, all of them by default).
 */
export function poolPrefixOf(
  hits: number | undefined,
  queries: number | undefined,
  queriedHits = hits,
): PoolPrefix | undefined {
  if (hits === undefined && queries === undefined) return undefined;
  const ratio = hitRatio(queriedHits, queries);
  return {
    ...(hits !== undefined ? { hitTokens: Math.round(hits) } : {}),
    ...(queries !== undefined ? { queriedTokens: Math.round(queries) } : {}),
    ...(ratio !== undefined ? { hitRatio: ratio } : {}),
  };
}

/**
 * The sum of several statuses' figures: a count is absent when none of them carries it, and the ratio
 * counts only the hits that had their queries counted (SGLang counts none): a figure's own ratio says
 * how many of its hits those were.
 */
export function sumPoolPrefix(figures: (PoolPrefix | undefined)[]): PoolPrefix | undefined {
  let hits: number | undefined;
  let queries: number | undefined;
  let queriedHits: number | undefined;
  for (const f of figures) {
    if (f?.hitTokens !== undefined) hits = (hits ?? 0) + f.hitTokens;
    if (f?.queriedTokens !== undefined) queries = (queries ?? 0) + f.queriedTokens;
    if (f?.hitTokens !== undefined && f.queriedTokens !== undefined) {
      const counted = f.hitRatio !== undefined ? Number(f.hitRatio) * f.queriedTokens : f.hitTokens;
      queriedHits = (queriedHits ?? 0) + counted;
    }
  }
  return poolPrefixOf(hits, queries, queriedHits);
}
