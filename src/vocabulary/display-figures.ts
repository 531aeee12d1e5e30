// status.display: the byte figures of a status rounded for people (the printer columns), derived from
// the exact figures in the same status so the two never disagree. Pure.
import type { StatusOf, StatusWritten } from '../api/types.ts';
import { formatQuantity } from '../kube/readable-quantity.ts';
import { parseQuantityBytes } from './quantity.ts';

type Kind = StatusWritten['kind'];
type StatusOfKind<K extends Kind> = StatusOf<Extract<StatusWritten, { kind: K }>>;

/** The fields of a status's display, as its schema names them (none when it has no display). */
type DisplayField<S> = S extends { display?: infer D } ? keyof NonNullable<D> : never;

/** For each display field, the exact figure it rounds, read from the kind's status. */
type Figures<S> = { [F in DisplayField<S>]: (status: S) => string | number | undefined };

/** Every display field of every kind, so one the schema adds cannot go without its figure. */
const figures: { [K in Kind]: Figures<StatusOfKind<K>> } = {
  KVCacheBackend: { capacity: (s) => s.capacity?.total, used: (s) => s.capacity?.used },
  KVCachePool: { usage: (s) => s.usage?.total },
  KVCachePoolBinding: {
    requestedQuota: (s) => s.requestedQuota,
    effectiveQuota: (s) => s.effectiveQuota,
    usage: (s) => s.usage,
  },
  ModelDeployment: {},
};

/** The status with `display` recomputed from its exact figures (absent when it has none). */
export function withDisplayFigures<O extends StatusWritten>(
  kind: O['kind'],
  status: StatusOf<O>,
): StatusOf<O> {
  // Indexed by a kind TypeScript cannot narrow here; `figures` above ties each kind to its own status.
  const read = figures[kind] as Record<string, (status: StatusOf<O>) => string | number | undefined>;
  const { display: _previous, ...rest } = status as StatusOf<O> & { display?: unknown };
  const display: Record<string, string> = {};
  for (const [name, figure] of Object.entries(read)) {
    const exact = figure(status);
    if (typeof exact === 'string' || typeof exact === 'number')
      display[name] = formatQuantity(parseQuantityBytes(exact));
  }
  return (Object.keys(display).length ? { ...rest, display } : rest) as StatusOf<O>;
}
