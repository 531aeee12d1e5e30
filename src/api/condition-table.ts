// How a kind declares its conditions: each type with the reasons it may carry. The controllers decide
// conditions through a kind's table (src/vocabulary/conditions.ts), so a reason missing from it fails the
// typecheck; the plugin, the webhooks and the docs name reasons through the constants made from it.

/** Each condition type of a kind, with every reason it may carry (CamelCase, stable for programs). */
export type ConditionTable = Readonly<Record<string, readonly string[]>>;

/** Every reason a table names (for one type, or for all). */
export type ReasonOf<T extends ConditionTable, K extends keyof T = keyof T> = T[K][number];

declare const relayedReason: unique symbol;
/** A reason another system chose (a container's waiting reason, a store reading): carried as it is. */
export type RelayedReason = string & { readonly [relayedReason]: true };

/** Marks a reason read from another system, which no table can list, as one to carry as it is. */
export const relayed = (reason: string) => reason as RelayedReason;

/** `{ Name: 'Name' }` for every condition type of a table. */
export function conditionTypes<const T extends ConditionTable>(table: T): { readonly [K in keyof T]: K } {
  return Object.fromEntries(Object.keys(table).map((k) => [k, k])) as { readonly [K in keyof T]: K };
}

/** `{ Name: 'Name' }` for every reason a table names. */
export function conditionReasons<const T extends ConditionTable>(
  table: T,
): { readonly [R in ReasonOf<T>]: R } {
  const names = Object.values(table).flat();
  return Object.fromEntries(names.map((r) => [r, r])) as { readonly [R in ReasonOf<T>]: R };
}
