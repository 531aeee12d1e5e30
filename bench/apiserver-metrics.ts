// What the apiserver itself counts (its /metrics, read as the cluster admin): write requests by verb
// and resource (apiserver_request_total), and admission webhook call latency as the apiserver sees it.
import type { KubeClient } from '../src/kube/client.ts';
import { type Families, parsePrometheusText } from '../src/store/prometheus.ts';

export const writeVerbs = new Set(['POST', 'PUT', 'PATCH', 'APPLY', 'DELETE', 'DELETECOLLECTION']);

export async function apiserverMetrics(admin: KubeClient): Promise<Families> {
  const res = await admin.send('GET', '/metrics');
  return parsePrometheusText(await res.body.text());
}

/** Write requests by `VERB group/resource[/subresource]`. */
export function writesByResource(f: Families): Map<string, number> {
  const out = new Map<string, number>();
  for (const s of f.get('apiserver_request_total') ?? []) {
    const l = s.labels;
    if (!writeVerbs.has(l.verb ?? '')) continue;
    const key = `${l.verb} ${l.group ? `${l.group}/` : ''}${l.resource}${l.subresource ? `/${l.subresource}` : ''}`;
    out.set(key, (out.get(key) ?? 0) + s.value);
  }
  return out;
}

/** Differences between two write tallies (only what moved). */
export function writesSince(before: Map<string, number>, after: Map<string, number>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [k, v] of after) if (v - (before.get(k) ?? 0) > 0) out[k] = v - (before.get(k) ?? 0);
  return out;
}

/** Lease renewals (leader election of the operator and the apiserver's own identity Leases). */
export const isLeaseWrite = (key: string) => key.includes('coordination.k8s.io/leases');

export function sum(record: Record<string, number>, keep: (key: string) => boolean = () => true): number {
  return Object.entries(record).reduce((s, [k, v]) => (keep(k) ? s + v : s), 0);
}

/** Cumulative histogram buckets of one family, summed over series matching `match`. */
export function histogram(
  f: Families,
  family: string,
  match: (labels: Record<string, string>) => boolean,
): Map<number, number> {
  const out = new Map<number, number>();
  for (const s of f.get(`${family}_bucket`) ?? []) {
    if (!match(s.labels)) continue;
    const le = s.labels.le === '+Inf' ? Number.POSITIVE_INFINITY : Number(s.labels.le);
    out.set(le, (out.get(le) ?? 0) + s.value);
  }
  return out;
}

/**
 * A quantile from the difference of two cumulative histograms, interpolated linearly inside its bucket
 * (as Prometheus' histogram_quantile does); undefined when nothing was observed between them.
 */
export function quantileSince(before: Map<number, number>, after: Map<number, number>, q: number) {
  const bounds = [...after.keys()].sort((a, b) => a - b);
  const counts = bounds.map((b) => (after.get(b) ?? 0) - (before.get(b) ?? 0));
  const total = counts.at(-1) ?? 0;
  if (total <= 0) return undefined;
  const rank = q * total;
  for (let i = 0; i < bounds.length; i++) {
    if (counts[i]! >= rank) {
      const lower = i === 0 ? 0 : bounds[i - 1]!;
      const below = i === 0 ? 0 : counts[i - 1]!;
      const upper = Number.isFinite(bounds[i]!) ? bounds[i]! : lower;
      const inBucket = counts[i]! - below;
      return inBucket > 0 ? lower + ((upper - lower) * (rank - below)) / inBucket : upper;
    }
  }
  return undefined;
}
