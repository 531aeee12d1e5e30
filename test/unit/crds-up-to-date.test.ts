// The committed CRDs in deploy/crds are exactly what the schemas in src/api generate.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { crdDir, generatedCrdFiles } from '../../src/cli/manifests.ts';

test('deploy/crds matches the schemas (run `npm run manifests` after a schema change)', () => {
  const generated = generatedCrdFiles();
  const committed = readdirSync(crdDir).filter((f) => f.endsWith('.yaml'));
  assert.deepEqual(committed.sort(), [...generated.keys()].sort());
  for (const [file, text] of generated) assert.equal(readFileSync(join(crdDir, file), 'utf8'), text, file);
});
