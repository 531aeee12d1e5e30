// Sorting names by their code units, as Go's sort.Strings does. `localeCompare` depends on the locale
// and pages ICU's collation data into the process (8 MiB of resident set in the operator).

/** -1, 0 or 1 as `a` sorts before, with or after `b`, code unit by code unit. */
export function ordinal(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
