// A backend's last failover (status.lastFailover) as the line `kubectl kvpool status` and `top` print.
// A figure the status does not carry is said so, never shown as 0. Pure.
import type { FailoverNode, Figure } from './status-model.ts';

const objects = (n: number | undefined) =>
  n === undefined ? 'objects not reported' : `${n} object${n === 1 ? '' : 's'}`;

const amount = (n: number | undefined, b: Figure | undefined) =>
  `${objects(n)}, ${b?.display ?? 'bytes not reported'}`;

/** One line: when, which master, what came back of what was on the tier, and when it was warm. */
export function failoverLine(f: FailoverNode): string {
  const head = `last failover ${f.at} (new master ${f.master})`;
  const tierKnown = f.reRegisteredObjects !== undefined || f.reRegisteredBytes !== undefined;
  if (!tierKnown && f.tierObjectsBefore === undefined)
    return `${head}: keys held in memory were lost; no disk tier figures to re-register`;
  const before =
    f.tierObjectsBefore !== undefined || f.tierBytesBefore
      ? ` of ${amount(f.tierObjectsBefore, f.tierBytesBefore)} on the tier before`
      : '';
  const back = amount(f.reRegisteredObjects, f.reRegisteredBytes);
  if (f.warmSeconds === undefined) return `${head}: re-registering, ${back} so far${before}`;
  return `${head}: re-registered ${back}${before}; warm ${f.warmSeconds.toFixed(1)} s after`;
}
