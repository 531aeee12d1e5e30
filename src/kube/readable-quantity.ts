// Byte counts as people write them, for messages, Events and printer columns. Status fields that
// scripts read keep the exact count; this is only ever the text a person reads.
import { binaryUnits } from './binary-units.ts';

/**
 * `8Gi` when a power-of-1024 unit divides the count exactly; otherwise the largest unit it reaches,
 * rounded to one decimal that is always written (`6.4Gi`, `6.0Gi`), so a rounded figure never reads
 * as an exact one. Counts under 1Ki are plain bytes (`1000`).
 */
export function formatQuantity(bytes: bigint | number): string {
  const n = typeof bytes === 'bigint' ? bytes : BigInt(Math.trunc(bytes));
  if (n < 0n) return `-${formatQuantity(-n)}`;
  for (const [suffix, unit] of binaryUnits) {
    if (n >= unit && n % unit === 0n) return `${n / unit}${suffix}`;
  }
  for (let i = 0; i < binaryUnits.length; i++) {
    const [suffix, unit] = binaryUnits[i]!;
    if (n < unit) continue;
    const tenths = (n * 10n + unit / 2n) / unit;
    // 1023.96Ki rounds to 1024.0Ki: say 1.0Mi instead.
    if (tenths >= 10240n && i > 0) return `1.0${binaryUnits[i - 1]![0]}`;
    return `${tenths / 10n}.${tenths % 10n}${suffix}`;
  }
  return n.toString();
}
