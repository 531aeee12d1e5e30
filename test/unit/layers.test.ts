// The layers of the tree, written once, bottom to top: a module imports only from rows below its own
// (or from its own folder), never from a row above or from another layer of its row. Type-only imports
// count, since they tie the modules' meaning together just the same. No module imports itself through
// others either.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { test } from 'node:test';
import ts from 'typescript';
import { projectRoot } from '../../images/toolchain.ts';

/**
 * Bottom to top. A layer is a folder or a file; a module belongs to the longest layer its path starts
 * with. The product (src/) is below everything else: it never imports the images, the local cluster,
 * the scripts or the benches.
 */
const layerOrder: readonly (readonly string[])[] = [
  ['src/kube', 'src/shell.ts'],
  ['src/api', 'src/inject'],
  ['src/vocabulary', 'src/store'],
  ['src/operator-io'],
  ['src/controllers/backend', 'src/controllers/pool', 'src/controllers/modeldeployment', 'src/webhooks'],
  ['src/controllers'],
  ['src/kvpool', 'src/kvpool-store', 'src/kubectl-kvpool'],
  ['images'],
  ['local'],
  ['scripts', 'bench'],
];

const roots = [...new Set(layerOrder.flat().map((layer) => layer.split('/')[0]!))];

/** The layer a module belongs to: the longest one its path starts with. */
function layerOf(file: string): string | undefined {
  return layerOrder
    .flat()
    .filter((layer) => file === layer || file.startsWith(`${layer}/`))
    .sort((a, b) => b.length - a.length)[0];
}

function rowOf(layer: string): number {
  return layerOrder.findIndex((row) => row.includes(layer));
}

/** Every module under the roots, as paths from the project root, with the modules under the roots it imports. */
function importGraph(): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  const files = roots.flatMap((root) =>
    readdirSync(join(projectRoot, root), { recursive: true, encoding: 'utf8' })
      .filter((f) => f.endsWith('.ts') && !f.split('/').includes('node_modules'))
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

/** The imports that break the order, each as `file -> target` with what is wrong and how to fix it. */
function orderViolations(graph: Map<string, string[]>): string[] {
  const found: string[] = [];
  for (const [file, targets] of graph) {
    const from = layerOf(file);
    if (from === undefined) {
      found.push(`${file} is in no layer: add its folder to a row of layerOrder`);
      continue;
    }
    for (const target of targets) {
      const to = layerOf(target);
      if (to === undefined || to === from) continue;
      const [fromRow, toRow] = [rowOf(from), rowOf(to)];
      if (toRow < fromRow) continue;
      const why =
        toRow === fromRow
          ? `${from}/ and ${to}/ are side by side: move what they share below both`
          : `${to}/ is above ${from}/: move what ${file} needs from it down to ${from}/ or below`;
      found.push(`${file} -> ${target} (${why})`);
    }
  }
  return found;
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

test('every import goes down the layer order (layerOrder, bottom to top)', () => {
  const offending = orderViolations(graph);
  assert.deepEqual(offending, [], `imports against the layer order:\n${offending.join('\n')}`);
});

test('the order catches an upward import, a sideways one, and a module in no layer', () => {
  const made = new Map([
    ['src/kube/a.ts', ['src/api/b.ts', 'src/kube/c.ts']],
    ['src/controllers/pool/d.ts', ['src/controllers/backend/e.ts', 'src/operator-io/f.ts']],
    ['images/g.ts', ['local/h.ts', 'src/kube/a.ts']],
    ['src/elsewhere.ts', []],
  ]);
  assert.deepEqual(orderViolations(made), [
    'src/kube/a.ts -> src/api/b.ts (src/api/ is above src/kube/: move what src/kube/a.ts needs from it down to src/kube/ or below)',
    'src/controllers/pool/d.ts -> src/controllers/backend/e.ts (src/controllers/pool/ and src/controllers/backend/ are side by side: move what they share below both)',
    'images/g.ts -> local/h.ts (local/ is above images/: move what images/g.ts needs from it down to images/ or below)',
    'src/elsewhere.ts is in no layer: add its folder to a row of layerOrder',
  ]);
});

test('local/ drives the product from outside: it imports nothing from src/controllers/', () => {
  const offending = [...graph]
    .filter(([file]) => file.startsWith('local/'))
    .flatMap(([file, targets]) =>
      targets.filter((t) => t.startsWith('src/controllers/')).map((t) => `${file} -> ${t}`),
    );
  assert.deepEqual(offending, [], `move what they share below src/controllers/:\n${offending.join('\n')}`);
});

test('no import circles (type-only imports count)', () => {
  const chains = circles(graph).map((chain) => chain.join(' -> '));
  assert.deepEqual(
    chains,
    [],
    `break each circle by moving the shared part to a leaf module:\n${chains.join('\n')}`,
  );
});
