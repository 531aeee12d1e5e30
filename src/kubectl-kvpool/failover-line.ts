// A backend's last failover (status.lastFailover) as the line `kubectl kvpool status` and `top` print.
// A figure the status does not carry is said so, never shown as 0. Pure.
import type { FailoverNode, Figure } from './status-model.ts';

const objects = (n: number | undefined) =>
  n === undefined ? 'objects not reported' : `${n} object${n === 1 ? '' : 's'}`;

const amount = (n: number | undefined, b: Figure | undefined) =>
  `${objects(n)}, ${b?.display ?? 'bytes not reported'}`;

/** What the memory held before and after the change, when the master reported both. */
function memoryPart(f: FailoverNode): string | undefined {
  if (f.dramKeysBefore === undefined || f.dramKeysAfter === undefined) return undefined;
  const kept = f.dramKeysAfter >= f.dramKeysBefore ? 'kept' : f.dramKeysAfter === 0 ? 'lost' : 'partly kept';
  return `memory ${kept}: ${amount(f.dramKeysBefore, f.dramBytesBefore)} before, ${amount(f.dramKeysAfter, f.dramBytesAfter)} after`;
}

/** One line: when, which master, what memory kept, what came back of what was on the tier, when it was warm. */
export function failoverLine(f: FailoverNode): string {
  const memory = memoryPart(f);
  const head = `last failover ${f.at} (new master ${f.master})${memory ? `: ${memory}` : ''}`;
  const tierKnown = f.reRegisteredObjects !== undefined || f.reRegisteredBytes !== undefined;
  if (!tierKnown && f.tierObjectsBefore === undefined)
    return memory ? head : `${head}: keys held in memory were lost; no disk tier figures to re-register`;
  const before =
    f.tierObjectsBefore !== undefined || f.tierBytesBefore
      ? ` of ${amount(f.tierObjectsBefore, f.tierBytesBefore)} on the tier before`
      : '';
  const back = amount(f.reRegisteredObjects, f.reRegisteredBytes);
  const tier = memory ? `${head}; tier` : head;
  if (f.warmSeconds === undefined) return `${tier}: re-registering, ${back} so far${before}`;
  return `${tier}: re-registered ${back}${before}; warm ${f.warmSeconds.toFixed(1)} s after`;
}
