// Condition types and reasons are named once, in src/api/ (the *-conditions.ts tables and the
// constants made from them); everywhere else in src/ names them through those constants, so a rename
// or a removal there reaches every reader, and a search for the constant finds each one.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import ts from 'typescript';
import { projectRoot } from '../../images/toolchain.ts';
import { conditionTables } from '../../src/api/conditions.ts';

/** The constants each kind's table is named through, and where they live. */
const constants: Record<keyof typeof conditionTables, { types: string; reasons: string; file: string }> = {
  KVCacheBackend: {
    types: 'BackendCondition',
    reasons: 'BackendReason',
    file: 'kvcache-backend-conditions.ts',
  },
  KVCachePool: { types: 'PoolCondition', reasons: 'PoolReason', file: 'kvcache-pool-conditions.ts' },
  KVCachePoolBinding: {
    types: 'BindingCondition',
    reasons: 'BindingReason',
    file: 'kvcache-pool-binding-conditions.ts',
  },
  ModelDeployment: {
    types: 'ModelDeploymentCondition',
    reasons: 'ModelDeploymentReason',
    file: 'model-deployment-conditions.ts',
  },
};

/** Every condition type and reason of the tables, each with the constants that name it. */
function knownNames(): Map<string, string[]> {
  const names = new Map<string, string[]>();
  const add = (name: string, constant: string) => {
    const list = names.get(name) ?? [];
    if (!list.includes(constant)) list.push(constant);
    names.set(name, list);
  };
  for (const [kind, table] of Object.entries(conditionTables)) {
    const c = constants[kind as keyof typeof conditionTables];
    for (const [type, reasons] of Object.entries(table)) {
      add(type, `${c.types}.${type} (src/api/${c.file})`);
      for (const reason of reasons) add(reason, `${c.reasons}.${reason} (src/api/${c.file})`);
    }
  }
  return names;
}

/** The string literals of a module that spell a known name, as `file:line: 'Name': use …`. */
function spelled(file: string, text: string, names: Map<string, string[]>): string[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const found: string[] = [];
  const visit = (node: ts.Node) => {
    const literal = ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node);
    const moduleName =
      node.parent !== undefined &&
      (ts.isImportDeclaration(node.parent) || ts.isExportDeclaration(node.parent));
    const use = literal && !moduleName ? names.get(node.text) : undefined;
    if (use) {
      const line = source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1;
      found.push(`${file}:${line}: '${(node as ts.StringLiteral).text}': use ${use.join(' or ')}`);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

/**
 * Modules still to be converted, each leaving this list when it is: they hold the disk-tier condition
 * (TierWritable) being added, and are converted once that lands. Nothing else may join it.
 */
const notYetConverted = new Set([
  'src/kubectl-kvpool/status-model.ts',
  'src/controllers/backend/reconciler.ts',
  'src/controllers/backend/status-view.ts',
  'src/controllers/backend/status.ts',
]);

/** Every module of src/ outside src/api/ with the literals it spells. */
function spelledInSrc(): Map<string, string[]> {
  const names = knownNames();
  assert.ok(names.has('QuotaLedgerAvailable') && names.has('MultiTenancyDisabled'), 'read the tables');
  const modules = readdirSync(join(projectRoot, 'src'), { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.ts') && !f.startsWith('api/'))
    .sort();
  assert.ok(modules.length > 100, `read ${modules.length} modules of src/`);
  return new Map(
    modules.map((f) => [
      join('src', f),
      spelled(join('src', f), readFileSync(join(projectRoot, 'src', f), 'utf8'), names),
    ]),
  );
}

test('src/ outside src/api/ spells no condition type or reason as a string literal', () => {
  const found = [...spelledInSrc()].filter(([file]) => !notYetConverted.has(file)).flatMap(([, f]) => f);
  assert.deepEqual(found, [], `name these through the constants of src/api/:\n${found.join('\n')}`);
});

test('a module on the not-yet-converted list still spells a name (else it leaves the list)', () => {
  const spelling = spelledInSrc();
  const done = [...notYetConverted].filter((file) => !spelling.get(file)?.length);
  assert.deepEqual(done, [], 'take these off notYetConverted');
});

test('the search finds a literal in a call, a comparison and a type, and passes imports, other words and templates', () => {
  const names = knownNames();
  const text = [
    "import { x } from './QuotaLedgerAvailable';",
    `decided('QuotaLedgerAvailable', 'False', 'MultiTenancyDisabled', \`off \${reason}\`);`,
    "if (c.reason === 'ForeignContentRemoved') phase = 'Ready';",
    "type Failure = { kind: 'LedgerUnreachable' };",
  ].join('\n');
  assert.deepEqual(spelled('made-up.ts', text, names), [
    "made-up.ts:2: 'QuotaLedgerAvailable': use PoolCondition.QuotaLedgerAvailable (src/api/kvcache-pool-conditions.ts)",
    "made-up.ts:2: 'MultiTenancyDisabled': use PoolReason.MultiTenancyDisabled (src/api/kvcache-pool-conditions.ts)",
    "made-up.ts:3: 'ForeignContentRemoved': use BackendReason.ForeignContentRemoved (src/api/kvcache-backend-conditions.ts)",
    "made-up.ts:4: 'LedgerUnreachable': use PoolReason.LedgerUnreachable (src/api/kvcache-pool-conditions.ts)",
  ]);
});
