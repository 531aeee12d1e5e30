// Writing a benchmark's figures, and the statistics they are reported with.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export function percentile(values: number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

export function median(values: number[]): number {
  return percentile(values, 50);
}

export function writeResult(name: string, result: Record<string, unknown>): string {
  const dir = join(import.meta.dirname, 'results');
  mkdirSync(dir, { recursive: true });
  const path = join(dir, `${name}.json`);
  writeFileSync(
    path,
    `${JSON.stringify({ benchmark: name, measuredAt: new Date().toISOString(), ...result }, null, 2)}\n`,
  );
  return path;
}
