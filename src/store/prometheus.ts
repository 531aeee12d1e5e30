// Prometheus text exposition format (version 0.0.4), as the Mooncake master serves it on /metrics.

export interface Sample {
  labels: Record<string, string>;
  value: number;
  /** The value as written: byte counts above 2^53 are read from it exactly. */
  text: string;
}

export type Families = Map<string, Sample[]>;

const lineRe = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s+(\S+)(\s+-?\d+)?$/;
const labelRe = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"\s*,?\s*/g;

function unescapeLabelValue(v: string): string {
  return v.replace(/\\(["\\n])/g, (_, c: string) => (c === 'n' ? '\n' : c));
}

function parseValue(v: string): number {
  if (v === '+Inf') return Number.POSITIVE_INFINITY;
  if (v === '-Inf') return Number.NEGATIVE_INFINITY;
  return Number(v);
}

/** Parses every sample; comment and blank lines are skipped, malformed lines ignored. */
export function parsePrometheusText(text: string): Families {
  const families: Families = new Map();
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (!line || line.startsWith('#')) continue;
    const m = lineRe.exec(line);
    if (!m) continue;
    const labels: Record<string, string> = {};
    if (m[3]) for (const l of m[3].matchAll(labelRe)) labels[l[1]!] = unescapeLabelValue(l[2]!);
    const samples = families.get(m[1]!) ?? [];
    samples.push({ labels, value: parseValue(m[4]!), text: m[4]! });
    families.set(m[1]!, samples);
  }
  return families;
}

/** The single unlabelled sample of a family, or undefined when the family is absent. */
export function gauge(families: Families, name: string): number | undefined {
  return families.get(name)?.find((s) => Object.keys(s.labels).length === 0)?.value;
}

const decimal = /^([+-]?)(\d+)(?:\.(\d*))?(?:[eE]([+-]?\d+))?$/;

/** A sample's value as an exact whole number (a fraction truncated); undefined when not finite. */
export function exactInteger(text: string): bigint | undefined {
  const m = decimal.exec(text.trim());
  if (!m) return undefined;
  const [, sign, whole = '', fraction = '', exponent = '0'] = m;
  const shift = Number(exponent);
  // A count of bytes is never written with thousands of digits; such a text is no reading.
  if (Math.abs(shift) > 400) return undefined;
  const digits = `${whole}${fraction}`;
  const point = whole.length + shift;
  const integral =
    point <= 0
      ? '0'
      : point >= digits.length
        ? digits + '0'.repeat(point - digits.length)
        : digits.slice(0, point);
  const n = BigInt(integral);
  return sign === '-' ? -n : n;
}

/** The single unlabelled sample of a family as an exact whole number (bytes), or undefined. */
export function gaugeBytes(families: Families, name: string): bigint | undefined {
  const s = families.get(name)?.find((x) => Object.keys(x.labels).length === 0);
  return s && exactInteger(s.text);
}

/** Samples of a family keyed by one label's value, as exact whole numbers (bytes). */
export function byLabelBytes(families: Families, name: string, label: string): Map<string, bigint> {
  const out = new Map<string, bigint>();
  for (const s of families.get(name) ?? []) {
    const v = s.labels[label];
    const n = exactInteger(s.text);
    if (v !== undefined && n !== undefined) out.set(v, n);
  }
  return out;
}

/** Samples of a family keyed by one label's value. */
export function byLabel(families: Families, name: string, label: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const s of families.get(name) ?? []) {
    const v = s.labels[label];
    if (v !== undefined) out.set(v, s.value);
  }
  return out;
}
