// status.display: the byte figures of a status rounded for people (the printer columns), derived from
// the exact figures in the same status so the two never disagree. Pure.
import { formatQuantity } from '../kube/readable-quantity.ts';
import { parseQuantityBytes } from './quantity.ts';

type Status = Record<string, unknown>;

/** Where each kind keeps the exact figures its display rounds: display field → path in status. */
const figurePaths: Record<string, Record<string, string[]>> = {
  KVCacheBackend: { capacity: ['capacity', 'total'], used: ['capacity', 'used'] },
  KVCachePool: { usage: ['usage', 'total'] },
  KVCachePoolBinding: {
    requestedQuota: ['requestedQuota'],
    effectiveQuota: ['effectiveQuota'],
    usage: ['usage'],
  },
};

function at(status: Status, path: string[]): unknown {
  let v: unknown = status;
  for (const key of path) v = v && typeof v === 'object' ? (v as Status)[key] : undefined;
  return v;
}

/** The status with `display` recomputed from its exact figures (absent when it has none). */
export function withDisplayFigures(kind: string, status: Status): Status {
  const paths = figurePaths[kind];
  if (!paths) return status;
  const { display: _previous, ...rest } = status;
  const display: Record<string, string> = {};
  for (const [name, path] of Object.entries(paths)) {
    const exact = at(rest, path);
    if (typeof exact === 'string' || typeof exact === 'number')
      display[name] = formatQuantity(parseQuantityBytes(exact));
  }
  return Object.keys(display).length ? { ...rest, display } : rest;
}
