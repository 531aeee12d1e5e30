// Loads every module under src/ that registers a metric, so the operator's registry holds all of them.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { projectRoot } from '../../images/toolchain.ts';
import { registry } from '../../src/kube/metrics.ts';

function metricModules(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return metricModules(path);
    return e.name.endsWith('.ts') && /registers: \[registry\]/.test(readFileSync(path, 'utf8')) ? [path] : [];
  });
}

/** The operator's registry with every metric of src/ registered. */
export async function fullRegistry(): Promise<typeof registry> {
  for (const module of metricModules(join(projectRoot, 'src'))) await import(module);
  return registry;
}
