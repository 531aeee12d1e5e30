// Unit tests never wait for real time to pass: a wait is stepped on a manual clock
// (test/support/manual-clock.ts) or mock.timers, or awaits the event that is its evidence. A sleep
// slows every run and fails on a loaded machine; a zero-delay yield (setImmediate, setTimeout 0) is fine.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import ts from 'typescript';
import { projectRoot } from '../../images/toolchain.ts';

const unitDir = join(projectRoot, 'test/unit');

/** What in one file waits for real time, as `line: why`. */
function realSleeps(text: string, file = 'test.ts'): string[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  // A file that fakes timers with mock.timers steps them; its timer calls wait for nothing real.
  const timersFaked = /\bmock\.timers\.enable\(/.test(text);
  const found: string[] = [];
  const report = (node: ts.Node, why: string) =>
    found.push(`${source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1}: ${why}`);
  const visit = (node: ts.Node) => {
    if (ts.isImportDeclaration(node) && /^(node:)?timers\/promises$/.test(literal(node.moduleSpecifier))) {
      const names = node.importClause?.namedBindings;
      if (names && ts.isNamedImports(names)) {
        for (const el of names.elements) {
          const name = (el.propertyName ?? el.name).getText(source);
          if (name !== 'setImmediate') report(el, `imports ${name} from timers/promises`);
        }
      } else if (names) report(node, 'imports all of timers/promises');
    }
    if (ts.isCallExpression(node)) {
      const callee = calleeName(node.expression);
      if ((callee === 'setTimeout' || callee === 'setInterval') && !timersFaked) {
        const delay = node.arguments[1];
        if (delay && !(ts.isNumericLiteral(delay) && Number(delay.text) === 0))
          report(node, `${callee} with a delay of ${delay.getText(source)}`);
      }
      if (callee && /^sleep/i.test(callee)) report(node, `calls ${callee}`);
      if (node.expression.getText(source) === 'scheduler.wait') report(node, 'calls scheduler.wait');
    }
    if ((ts.isWhileStatement(node) || ts.isDoStatement(node)) && readsTime(node.expression, source))
      report(node, 'busy-waits on the time');
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

function literal(node: ts.Expression): string {
  return ts.isStringLiteral(node) ? node.text : '';
}

/** `f` for `f(...)`, `x.f(...)` and `globalThis.f(...)`. */
function calleeName(expr: ts.Expression): string | undefined {
  if (ts.isIdentifier(expr)) return expr.text;
  if (ts.isPropertyAccessExpression(expr)) return expr.name.text;
  return undefined;
}

function readsTime(expr: ts.Expression, source: ts.SourceFile): boolean {
  return /\b(performance\.now|Date\.now)\(\)/.test(expr.getText(source));
}

test('no unit test waits for real time', () => {
  const files = readdirSync(unitDir, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.ts'));
  const found = files.flatMap((f) =>
    realSleeps(readFileSync(join(unitDir, f), 'utf8'), f).map((s) => `${f}:${s}`),
  );
  assert.deepEqual(found, [], 'step a ManualClock or mock.timers, or await the event itself');
});

test('the check finds each kind of real wait, and lets zero-delay yields and faked timers pass', () => {
  const kinds = [
    'await new Promise((r) => setTimeout(r, 10));',
    'setInterval(tick, periodMs);',
    "import { setTimeout as sleep } from 'node:timers/promises';",
    "import { scheduler } from 'timers/promises';",
    'await sleep(50);',
    'await scheduler.wait(5);',
    'const end = performance.now() + 1; while (performance.now() < end);',
    'globalThis.setTimeout(done, 5);',
  ];
  for (const line of kinds) assert.equal(realSleeps(line).length, 1, line);
  const fine = [
    "import { setImmediate as turn } from 'node:timers/promises';",
    'setTimeout(() => {}, 0);',
    'setTimeout(done);',
    'setImmediate(done);',
    "mock.timers.enable({ apis: ['setTimeout'] }); setTimeout(done, 5000); mock.timers.tick(5000);",
    'clock.advance(50);',
  ];
  for (const line of fine) assert.deepEqual(realSleeps(line), [], line);
});
