// The source tree's layers import downward only: admission, the local cluster and the store program
// never reach into controllers, and no module imports itself through others (type-only imports
// included, since they tie the modules' meaning together just the same).
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { test } from 'node:test';
import ts from 'typescript';
import { projectRoot } from '../../src/local/toolchain.ts';

const srcRoot = join(projectRoot, 'src');

/** Every module in src/, as paths relative to src/, with the src/ modules it imports. */
function importGraph(): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  const files = readdirSync(srcRoot, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.ts'));
  for (const file of files.sort()) {
    const text = readFileSync(join(srcRoot, file), 'utf8');
    const { importedFiles } = ts.preProcessFile(text, true, true);
    const targets = importedFiles
      .map((i) => i.fileName)
      .filter((name) => name.startsWith('.'))
      .map((name) => relative(srcRoot, resolve(srcRoot, dirname(file), name)))
      .filter((target) => !target.startsWith('..'));
    graph.set(file, [...new Set(targets)]);
  }
  return graph;
}

/** One import chain per circle, each starting and ending at the same module. */
function circles(graph: Map<string, string[]>): string[][] {
  const found: string[][] = [];
  const done = new Set<string>();
  const path: string[] = [];
  const onPath = new Set<string>();
  const visit = (file: string) => {
    if (onPath.has(file)) {
      found.push([...path.slice(path.indexOf(file)), file]);
      return;
    }
    if (done.has(file)) return;
    onPath.add(file);
    path.push(file);
    for (const target of graph.get(file) ?? []) visit(target);
    path.pop();
    onPath.delete(file);
    done.add(file);
  };
  for (const file of graph.keys()) visit(file);
  return found;
}

const graph = importGraph();

test('webhooks/, local/ and agent/ import nothing from controllers/', () => {
  const offending = [...graph]
    .filter(([file]) => /^(webhooks|local|agent)\//.test(file))
    .flatMap(([file, targets]) =>
      targets.filter((t) => t.startsWith('controllers/')).map((t) => `${file} -> ${t}`),
    );
  assert.deepEqual(offending, [], `move what they share below controllers/:\n${offending.join('\n')}`);
});

test('controllers/backend and controllers/pool do not import each other', () => {
  const offending = [...graph]
    .filter(([file]) => /^controllers\/(backend|pool)\//.test(file))
    .flatMap(([file, targets]) =>
      targets
        .filter((t) => /^controllers\/(backend|pool)\//.test(t) && t.split('/')[1] !== file.split('/')[1])
        .map((t) => `${file} -> ${t}`),
    );
  assert.deepEqual(offending, [], `move what they share below controllers/:\n${offending.join('\n')}`);
});

test('no import circles in src/ (type-only imports count)', () => {
  const chains = circles(graph).map((chain) => chain.join(' -> '));
  assert.deepEqual(
    chains,
    [],
    `break each circle by moving the shared part to a leaf module:\n${chains.join('\n')}`,
  );
});
