// The README leads a reader the way the docs promise: what kvpool is, how to install it, how to try it
// locally, then development and benchmarks. Every page under docs/ is listed once, either among the
// user docs (the README's Documentation table) or among the engineering notes (docs/contributing.md),
// and the test command the README gives is the one CI runs.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { projectRoot } from '../../images/toolchain.ts';

const readme = readFileSync(join(projectRoot, 'README.md'), 'utf8');
const contributing = readFileSync(join(projectRoot, 'docs', 'contributing.md'), 'utf8');
const engineeringNotes = [
  'local-cluster.md',
  'store-program.md',
  'engine-standin.md',
  'performance-history.md',
];

/** The text of a `## title` section of `page`. */
function section(page: string, title: string): string {
  const start = page.indexOf(`\n## ${title}\n`);
  assert.ok(start >= 0, `no section "## ${title}"`);
  const end = page.indexOf('\n## ', start + 1);
  return page.slice(start, end < 0 ? undefined : end);
}

/** The docs/ pages a Markdown table's rows link to, relative to docs/. */
function linkedPages(text: string, prefix: string): Set<string> {
  const rows = text.split('\n').filter((l) => l.startsWith('| ['));
  return new Set(
    rows.flatMap((row) =>
      [...row.matchAll(/\]\(([^)#]+)[^)]*\)/g)]
        .map((m) => m[1]!)
        .filter((t) => t.startsWith(prefix))
        .map((t) => t.slice(prefix.length)),
    ),
  );
}

describe('the README and the docs index', () => {
  it('say what kvpool is and how to install it, then how to try it locally, then development and benchmarks', () => {
    const headings = [...readme.matchAll(/^## (.+)$/gm)].map((m) => m[1]!);
    const at = (h: string) => {
      const i = headings.indexOf(h);
      assert.ok(i >= 0, `README has no "## ${h}": ${headings.join(', ')}`);
      return i;
    };
    assert.ok(readme.indexOf('kvpool is a Kubernetes operator') < readme.indexOf('\n## '));
    const order = ['Install on your cluster', 'Try it locally', 'Development', 'Performance'].map(at);
    assert.deepEqual(
      order,
      [...order].sort((a, b) => a - b),
      `README sections out of order: ${headings.join(', ')}`,
    );
  });

  it('give the test command CI runs', () => {
    const ci = readFileSync(join(projectRoot, '.ci', 'run'), 'utf8')
      .trim()
      .split('\n')
      .at(-1)!;
    const block = /```console\n([\s\S]*?)```/.exec(section(readme, 'Try it locally'))![1]!;
    const commands = block.split('\n').map((l) => l.replace(/#.*/, '').trim());
    assert.ok(commands.includes(ci), `the README's commands ${JSON.stringify(commands)} lack CI's "${ci}"`);
    assert.ok(commands.includes('npm start'));
  });

  it('list every page under docs/ once, user docs in the README, engineering notes on the contributor page', () => {
    const pages = readdirSync(join(projectRoot, 'docs')).filter((f) => f.endsWith('.md'));
    const user = linkedPages(section(readme, 'Documentation'), 'docs/');
    const notes = linkedPages(section(contributing, 'Engineering notes'), '');
    assert.deepEqual(
      engineeringNotes.filter((n) => user.has(n)),
      [],
      'an engineering note is listed among the user docs',
    );
    assert.deepEqual(
      engineeringNotes.filter((n) => !notes.has(n)),
      [],
      'an engineering note missing from docs/contributing.md',
    );
    const unlisted = pages.filter((p) => !user.has(p) && !notes.has(p) && p !== 'contributing.md');
    assert.deepEqual(unlisted, [], 'a page under docs/ that no index lists');
    assert.ok(readme.includes('](docs/contributing.md)'));
  });
});
