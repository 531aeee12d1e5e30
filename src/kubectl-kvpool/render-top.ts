// `kubectl kvpool top` for people: per backend, the store-wide line, then one row per domain. A figure
// the store does not report prints as —, never as 0. Pure.
import { failoverLine } from './failover-line.ts';
import { renderTable } from './table.ts';
import type { TopBackend } from './top-model.ts';

const absent = '—';
const n = (v: number | undefined) => (v === undefined ? absent : String(v));

function storeLine(t: TopBackend): string {
  const l = t.lookups;
  const capacity = t.capacity
    ? `capacity ${t.capacity.total.display}, ${t.capacity.used.display} used`
    : `capacity ${absent}`;
  const hitRate = t.hitRate === undefined ? absent : `${(t.hitRate * 100).toFixed(1)}%`;
  const gets = `gets ${n(l.total)}: hits ${n(l.hits)} (memory ${n(l.memoryHits)}, disk ${n(l.diskHits)}), misses ${n(l.misses)}, hit rate ${hitRate}`;
  return [
    `KVCacheBackend ${t.backend} (read from ${t.source ?? absent})`,
    `  ${capacity}`,
    `  ${gets}; existence checks ${n(l.existChecks)}`,
  ].join('\n');
}

export function renderTop(backends: TopBackend[]): string {
  if (backends.length === 0) return 'No KVCacheBackend in this cluster.\n';
  const blocks = backends.map((t) => {
    const read = t.error
      ? `KVCacheBackend ${t.backend}: the store could not be read${t.source ? ` from ${t.source}` : ''}: ${t.error}`
      : storeLine(t);
    const head = t.lastFailover ? `${read}\n  ${failoverLine(t.lastFailover)}` : read;
    const rows = t.domains.map((d) => [
      d.domain,
      d.bindings.join(',') || absent,
      d.usage?.display ?? absent,
      d.grant?.display ?? absent,
      d.requested?.display ?? absent,
      d.overQuota === undefined ? absent : d.overQuota ? 'yes' : 'no',
      n(d.poolPrefix?.hitTokens),
      d.poolPrefix?.hitRatio === undefined ? absent : `${(Number(d.poolPrefix.hitRatio) * 100).toFixed(1)}%`,
    ]);
    const table = rows.length
      ? renderTable(
          ['DOMAIN', 'BINDING', 'USAGE', 'GRANT', 'REQUESTED', 'OVER QUOTA', 'TOKENS FROM POOL', 'HIT RATIO'],
          rows,
        )
      : ['(no domain)'];
    return [head, ...table.map((l) => `  ${l}`)].join('\n');
  });
  return `${blocks.join('\n\n')}\n\nThe store counts gets, hits and misses per master, not per domain; — is a figure it did not report.\nTOKENS FROM POOL and HIT RATIO: prompt tokens the domain's ModelDeployments loaded from the pool, as their engines count them.\n`;
}
