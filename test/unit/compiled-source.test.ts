// The images run src/ compiled to JavaScript (images/compiled-source.ts): relative imports point at the
// compiled files, and every program's module graph loads from the compiled tree alone.
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { bundledProgram, compileModule, compileProduct, compileTree } from '../../images/compiled-source.ts';
import { projectRoot } from '../../images/toolchain.ts';

describe('compileModule', () => {
  it('rewrites relative .ts imports, static and dynamic, and drops type-only imports', () => {
    const js = compileModule(
      'x.ts',
      [
        "import { a } from './a.ts';",
        "import type { B } from '../b.ts';",
        "import { parse } from 'yaml';",
        "export const f = async (n: number): Promise<B> => (await import('./c.ts')).g(n, a, parse);",
        'export const here = import.meta.dirname;',
      ].join('\n'),
    );
    assert.match(js, /from "\.\/a\.js"/);
    assert.match(js, /import\("\.\/c\.js"\)/);
    assert.match(js, /from 'yaml'|from "yaml"/);
    assert.doesNotMatch(js, /b\.ts|b\.js|: number/);
    assert.match(js, /import\.meta\.dirname/);
  });

  it('names the file of a syntax error', () => {
    assert.throws(() => compileModule('src/broken.ts', 'const = 1;'), /src\/broken\.ts: /);
  });
});

describe('compileTree of src/', () => {
  it('gives every program a module graph that loads, with the files beside the modules copied', () => {
    const dir = mkdtempSync(join(tmpdir(), 'kvpool-compiled-'));
    try {
      symlinkSync(join(projectRoot, 'node_modules'), join(dir, 'node_modules'));
      compileTree(join(projectRoot, 'src'), join(dir, 'src'));
      assert.ok(
        existsSync(join(dir, 'src', 'kvpool-store', 'member_bootstrap.py')),
        'the member bootstrap is copied',
      );
      assert.ok(!existsSync(join(dir, 'src', 'kvpool', 'start-operator.ts')), 'no TypeScript is left');
      const modules = [
        'kvpool/start-operator.js',
        'kvpool/operator.js',
        'kvpool/uninstall.js',
        'kvpool-store/leader.js',
        'kvpool-store/member.js',
      ];
      const script = `for (const m of ${JSON.stringify(modules)}) await import('./src/' + m); console.log('loaded');`;
      const out = execFileSync(process.execPath, ['--input-type=module', '-e', script], {
        cwd: dir,
        encoding: 'utf8',
      });
      assert.equal(out.trim(), 'loaded');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('compileProduct of src/', () => {
  it('bundles the operator image program into one file that runs on its own, client-node left out', () => {
    const dir = mkdtempSync(join(tmpdir(), 'kvpool-bundled-'));
    try {
      compileProduct(join(projectRoot, 'src'), join(dir, 'src'));
      const program = join(dir, 'src', `${bundledProgram}.js`);
      const text = readFileSync(program, 'utf8');
      assert.doesNotMatch(text, /from\s*["']\.\.?\//, 'no relative import is left');
      assert.match(
        text,
        /import\(["']@kubernetes\/client-node["']\)/,
        'client-node is imported only when needed',
      );
      assert.match(text, /function startOperator\(/, 'names are kept');
      // No node_modules beside it: everything the program runs is in the one file.
      const run = spawnSync(process.execPath, [program], { encoding: 'utf8' });
      assert.equal(run.status, 0, run.stderr);
      assert.match(run.stderr, /^usage: kvpool <command>/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
