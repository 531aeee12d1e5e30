// Writing a benchmark's figures, and the statistics they are reported with. Every result carries the
// machine's load average when the bench started and when it wrote its figures: the machine may be
// shared, and a reader needs the conditions to read the numbers.
import { mkdirSync, writeFileSync } from 'node:fs';
import { availableParallelism, loadavg } from 'node:os';
import { join } from 'node:path';

const loadAtStart = loadavg();

export function percentile(values: number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

export function median(values: number[]): number {
  return percentile(values, 50);
}

/** p50 and p99 of a set of latencies, rounded to 0.1. */
export function spread(values: number[]): { p50: number; p99: number; n: number } {
  return { p50: round(median(values), 1), p99: round(percentile(values, 99), 1), n: values.length };
}

export function round(value: number, digits = 2): number {
  const f = 10 ** digits;
  return Math.round(value * f) / f;
}

/** a / b rounded to two digits; undefined when either is missing. */
export function ratio(a: number | undefined, b: number | undefined): number | undefined {
  return a === undefined || b === undefined || b === 0 ? undefined : round(a / b, 2);
}

function machine() {
  const r = (xs: number[]) => xs.map((x) => round(x, 2));
  return {
    cores: availableParallelism(),
    loadAverageAtStart: r(loadAtStart),
    loadAverageAtEnd: r(loadavg()),
  };
}

export function writeResult(name: string, result: Record<string, unknown>): string {
  const dir = join(import.meta.dirname, 'results');
  mkdirSync(dir, { recursive: true });
  const path = join(dir, `${name}.json`);
  writeFileSync(
    path,
    `${JSON.stringify({ benchmark: name, measuredAt: new Date().toISOString(), machine: machine(), ...result }, null, 2)}\n`,
  );
  return path;
}
