// A status is typed from its kind's schema (src/api/types.ts StatusOf), never as a loose record: a
// misspelt or stale field then fails the type check instead of reaching the API server.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { projectRoot } from '../../images/toolchain.ts';

const looseRecord = /Record<\s*string\s*,\s*(unknown|any)\s*>/;

/** Lines that name a status and type it as a loose record, as `file:line: text`. */
function looseStatuses(files: Map<string, string>): string[] {
  return [...files].flatMap(([file, text]) =>
    text
      .split('\n')
      .flatMap((line, i) =>
        /status/i.test(line) && looseRecord.test(line) ? [`${file}:${i + 1}: ${line.trim()}`] : [],
      ),
  );
}

test('no status in src/ is a Record<string, unknown>: use StatusOf<the kind> from src/api/types.ts', () => {
  const files = new Map(
    readdirSync(join(projectRoot, 'src'), { recursive: true, encoding: 'utf8' })
      .filter((f) => f.endsWith('.ts'))
      .map((f) => [join('src', f), readFileSync(join(projectRoot, 'src', f), 'utf8')]),
  );
  assert.ok(files.size > 100, `read ${files.size} modules of src/`);
  const found = looseStatuses(files);
  assert.deepEqual(
    found,
    [],
    `type these from the schema (StatusOf<KVCachePool> and so on):\n${found.join('\n')}`,
  );
});

test('the search finds a loose status alias and cast, and passes other records', () => {
  const files = new Map([
    ['a.ts', 'type Status = Record<string, unknown>;\nconst entry: Record<string, unknown> = {};'],
    ['b.ts', 'const clean = f(JSON.parse(status) as Record<string, any>);'],
  ]);
  assert.deepEqual(looseStatuses(files), [
    'a.ts:1: type Status = Record<string, unknown>;',
    'b.ts:1: const clean = f(JSON.parse(status) as Record<string, any>);',
  ]);
});
