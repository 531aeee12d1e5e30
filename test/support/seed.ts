// The walkthrough's manifests, as users apply them from examples/walkthrough.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { projectRoot } from '../../images/toolchain.ts';
import type { KubeObject } from '../../src/kube/object.ts';

export const seedDir = join(projectRoot, 'examples', 'walkthrough');

function requireSeed(): void {
  if (!existsSync(seedDir)) {
    throw new Error(`the walkthrough manifests are expected at ${seedDir}`);
  }
}

export function seedFiles(): string[] {
  requireSeed();
  return readdirSync(seedDir)
    .filter((f) => f.endsWith('.yaml'))
    .sort();
}

/** A step's manifest text, with INSTANCE_TYPE replaced when an instance type is given. */
export function seedText(file: string, instanceType?: string): string {
  requireSeed();
  const text = readFileSync(join(seedDir, file), 'utf8');
  return instanceType ? text.replaceAll('INSTANCE_TYPE', instanceType) : text;
}

/** A step's objects. */
export function seedObjects(file: string, instanceType?: string): KubeObject[] {
  return parseAllDocuments(seedText(file, instanceType))
    .map((d) => d.toJSON() as KubeObject)
    .filter(Boolean);
}
