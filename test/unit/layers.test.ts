// The source tree's layers import downward only: admission, the local cluster and the store program
// never reach into controllers, the product (src/) never imports the local cluster (local/), and no
// module imports itself through others (type-only imports included, since they tie the modules'
// meaning together just the same).
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { test } from 'node:test';
import ts from 'typescript';
import { projectRoot } from '../../local/toolchain.ts';

const roots = ['src', 'local'];

/** Every module in src/ and local/, as paths from the project root, with the modules of both it imports. */
function importGraph(): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  const files = roots.flatMap((root) =>
    readdirSync(join(projectRoot, root), { recursive: true, encoding: 'utf8' })
      .filter((f) => f.endsWith('.ts'))
      .map((f) => join(root, f)),
  );
  for (const file of files.sort()) {
    const text = readFileSync(join(projectRoot, file), 'utf8');
    const { importedFiles } = ts.preProcessFile(text, true, true);
    const targets = importedFiles
      .map((i) => i.fileName)
      .filter((name) => name.startsWith('.'))
      .map((name) => relative(projectRoot, resolve(projectRoot, dirname(file), name)))
      .filter((target) => roots.some((root) => target.startsWith(`${root}/`)));
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
    .filter(([file]) => /^(src\/webhooks|local|src\/agent)\//.test(file))
    .flatMap(([file, targets]) =>
      targets.filter((t) => t.startsWith('src/controllers/')).map((t) => `${file} -> ${t}`),
    );
  assert.deepEqual(offending, [], `move what they share below controllers/:\n${offending.join('\n')}`);
});

test('controllers/backend and controllers/pool do not import each other', () => {
  const offending = [...graph]
    .filter(([file]) => /^src\/controllers\/(backend|pool)\//.test(file))
    .flatMap(([file, targets]) =>
      targets
        .filter(
          (t) => /^src\/controllers\/(backend|pool)\//.test(t) && t.split('/')[2] !== file.split('/')[2],
        )
        .map((t) => `${file} -> ${t}`),
    );
  assert.deepEqual(offending, [], `move what they share below controllers/:\n${offending.join('\n')}`);
});

test('the product (src/) imports nothing from the local cluster (local/)', () => {
  const offending = [...graph]
    .filter(([file]) => file.startsWith('src/'))
    .flatMap(([file, targets]) =>
      targets.filter((t) => t.startsWith('local/')).map((t) => `${file} -> ${t}`),
    );
  assert.deepEqual(offending, [], `the local cluster is test infrastructure:\n${offending.join('\n')}`);
});

test('no import circles in src/ or local/ (type-only imports count)', () => {
  const chains = circles(graph).map((chain) => chain.join(' -> '));
  assert.deepEqual(
    chains,
    [],
    `break each circle by moving the shared part to a leaf module:\n${chains.join('\n')}`,
  );
});
