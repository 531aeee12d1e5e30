// The product's code reads one screen at a time and cites only what the repository holds: no function
// in src/ runs past 80 lines, and no line cites a document that is not here (a numbered section of an
// outside spec, or a docs/ path that does not exist).
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import ts from 'typescript';
import { projectRoot } from '../../images/toolchain.ts';

const maxLines = 80;

/** Every .ts file under src/, as paths from the project root. */
function sourceFiles(): string[] {
  return readdirSync(join(projectRoot, 'src'), { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.ts'))
    .map((f) => join('src', f))
    .sort();
}

/** A function's name as a reader finds it: its own, or that of what it is assigned to. */
function nameOf(node: ts.FunctionLikeDeclaration, source: ts.SourceFile): string {
  if (ts.isConstructorDeclaration(node)) return 'constructor';
  if (node.name) return node.name.getText(source);
  const parent = node.parent;
  if (
    (ts.isVariableDeclaration(parent) ||
      ts.isPropertyAssignment(parent) ||
      ts.isPropertyDeclaration(parent)) &&
    parent.name
  ) {
    return parent.name.getText(source);
  }
  return ts.isArrowFunction(node) ? '(arrow function)' : '(function expression)';
}

/** Each function in `text` longer than `max` lines, as `file:line name (N lines)`. */
function longFunctions(file: string, text: string, max = maxLines): string[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const found: string[] = [];
  const visit = (node: ts.Node) => {
    if (
      (ts.isFunctionDeclaration(node) ||
        ts.isMethodDeclaration(node) ||
        ts.isConstructorDeclaration(node) ||
        ts.isGetAccessorDeclaration(node) ||
        ts.isSetAccessorDeclaration(node) ||
        ts.isArrowFunction(node) ||
        ts.isFunctionExpression(node)) &&
      node.body
    ) {
      const first = source.getLineAndCharacterOfPosition(node.getStart(source)).line;
      const last = source.getLineAndCharacterOfPosition(node.getEnd()).line;
      const length = last - first + 1;
      if (length > max) found.push(`${file}:${first + 1} ${nameOf(node, source)} (${length} lines)`);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

/** Whether `path` (from the project root) is a file or folder, or a decision's number naming exactly one. */
function held(path: string): boolean {
  if (existsSync(join(projectRoot, path))) return true;
  const number = /^docs\/decisions\/(\d{4})$/.exec(path)?.[1];
  if (number === undefined) return false;
  const decisions = readdirSync(join(projectRoot, 'docs/decisions'));
  return decisions.filter((name) => name.startsWith(`${number}-`)).length === 1;
}

/** Each line of `text` citing a document the repository does not hold, as `file:line: the line`. */
function foreignCitations(file: string, text: string, holds = held): string[] {
  const found: string[] = [];
  text.split('\n').forEach((line, i) => {
    const missing = [...line.matchAll(/\bdocs\/[\w./-]*/g)]
      .map((m) => m[0].replace(/[.\-/]+$/, ''))
      .filter((path) => !holds(path));
    if (/§|\b(?:KV-cache|ModelDeployment) spec\b|\.\.\/shared\b/.test(line) || missing.length > 0) {
      found.push(`${file}:${i + 1}: ${line.trim()}`);
    }
  });
  return found;
}

const files = sourceFiles().map((file) => ({ file, text: readFileSync(join(projectRoot, file), 'utf8') }));

test(`no function in src/ runs past ${maxLines} lines`, () => {
  const long = files.flatMap(({ file, text }) => longFunctions(file, text));
  assert.deepEqual(long, [], `split each into named steps:\n${long.join('\n')}`);
});

test('src/ cites only documents the repository holds', () => {
  const cited = files.flatMap(({ file, text }) => foreignCitations(file, text));
  assert.deepEqual(
    cited,
    [],
    `cite docs/ or docs/decisions/NNNN-….md, or state the rule where it is used:\n${cited.join('\n')}`,
  );
});

test('the checks name a long function of each kind and each foreign citation', () => {
  const body = (n: number) => Array.from({ length: n }, () => '  x();').join('\n');
  const text = [
    `function long() {\n${body(79)}\n}`,
    `function fits() {\n${body(78)}\n}`,
    `const arrow = () => {\n${body(79)}\n};`,
    `class C {\n  method() {\n${body(79)}\n  }\n}`,
  ].join('\n');
  assert.deepEqual(longFunctions('src/a.ts', text), [
    'src/a.ts:1 long (81 lines)',
    'src/a.ts:162 arrow (81 lines)',
    'src/a.ts:244 method (81 lines)',
  ]);
  const cites = [
    '// a rule (KV-cache spec §3.1)',
    '// continued, §2.1',
    '// see docs/decisions/0005-single-writer-status.md.',
    '// see docs/nowhere.md',
    '// see docs/decisions (store hardening), docs/decisions/0008 and docs/store-program.md',
    '// see docs/decisions/0000',
  ].join('\n');
  assert.deepEqual(foreignCitations('src/b.ts', cites), [
    'src/b.ts:1: // a rule (KV-cache spec §3.1)',
    'src/b.ts:2: // continued, §2.1',
    'src/b.ts:4: // see docs/nowhere.md',
    'src/b.ts:6: // see docs/decisions/0000',
  ]);
});
