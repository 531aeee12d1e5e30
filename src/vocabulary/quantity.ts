// Kubernetes quantities as whole bytes. BigInt keeps values up to 2^63-1 exact (a number stops at 2^53).
import { binaryUnits } from '../kube/binary-units.ts';

const binarySuffixes = binaryUnits.map(([suffix]) => suffix).join('|');
const quantityGrammar = new RegExp(
  `^([+-])?(\\d+(?:\\.\\d*)?|\\.\\d+)(${binarySuffixes}|[numkMGTPE]|[eE][+-]?\\d+)?$`,
);

const binaryUnitBytes = new Map(binaryUnits);
const decimalExponents: Record<string, number> = {
  n: -9,
  u: -6,
  m: -3,
  k: 3,
  M: 6,
  G: 9,
  T: 12,
  P: 15,
  E: 18,
};

/** The scale a suffix applies, as a fraction numerator/denominator. */
function suffixScale(suffix: string): { num: bigint; den: bigint } {
  if (suffix === '') return { num: 1n, den: 1n };
  const bytes = binaryUnitBytes.get(suffix);
  if (bytes !== undefined) return { num: bytes, den: 1n };
  const exponent = decimalExponents[suffix] ?? Number(suffix.slice(1));
  return exponent >= 0
    ? { num: 10n ** BigInt(exponent), den: 1n }
    : { num: 1n, den: 10n ** BigInt(-exponent) };
}

/** A quantity as an exact fraction num/den (den > 0), so `500m`, `1e-3` and `8Gi` all stay exact. */
export function parseQuantity(q: string | number): { num: bigint; den: bigint } {
  if (typeof q === 'number') {
    if (Number.isSafeInteger(q)) return { num: BigInt(q), den: 1n };
    if (!Number.isFinite(q)) throw new Error(`quantity ${q} is not a finite number`);
    return parseQuantity(String(q));
  }
  const match = quantityGrammar.exec(q.trim());
  if (!match) throw new Error(`"${q}" is not a Kubernetes quantity; write it like 8Gi, 64Mi or 134217728`);
  const [, sign = '', mantissa = '', suffix = ''] = match;
  const [whole = '', fraction = ''] = mantissa.split('.');
  const scale = suffixScale(suffix);
  const num = BigInt(`${whole || '0'}${fraction}`) * scale.num;
  return { num: sign === '-' ? -num : num, den: 10n ** BigInt(fraction.length) * scale.den };
}

/** `num/den` rounded up (towards positive infinity), as the apiserver's Value() rounds. */
export function ceilDiv(num: bigint, den: bigint): bigint {
  return num >= 0n ? (num + den - 1n) / den : num / den;
}

/** Bytes in a quantity (`8Gi`, `64Mi`, `134217728`, `1G`, `1e9`); fractions round up, as the apiserver's Value() does. */
export function parseQuantityBytes(q: string | number): bigint {
  const { num, den } = parseQuantity(q);
  return ceilDiv(num, den);
}

/** The BinarySI form of a byte count: the largest power-of-1024 suffix that divides it, else plain bytes. */
export function formatBinarySI(bytes: bigint): string {
  if (bytes === 0n) return '0';
  for (const [suffix, unit] of binaryUnits) {
    if (bytes % unit === 0n) return `${bytes / unit}${suffix}`;
  }
  return bytes.toString();
}
