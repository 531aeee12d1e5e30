// The power-of-1024 suffixes of Kubernetes quantities, one table for parsing and for writing them.

/** Each binary suffix with the bytes it stands for, largest first. */
export const binaryUnits: readonly (readonly [suffix: string, bytes: bigint])[] = [
  ['Ei', 1n << 60n],
  ['Pi', 1n << 50n],
  ['Ti', 1n << 40n],
  ['Gi', 1n << 30n],
  ['Mi', 1n << 20n],
  ['Ki', 1n << 10n],
];
