// The committed generated files are exactly what the code generates: deploy/crds and the chart's CRDs
// from the schemas in src/api, the chart's webhook configurations from the hooks in src/webhooks, and
// the non-Helm install (deploy/namespace.yaml, crds.yaml, install.yaml) from the chart (`helm template`
// with its defaults).
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { projectRoot } from '../../images/toolchain.ts';
import { generatedSourceFiles, renderInstallFiles } from '../../scripts/manifests.ts';

const fix = 'run `npm run manifests` after a schema, hook or chart change';

test(`deploy/crds and the chart's generated files match the code (${fix})`, () => {
  const generated = generatedSourceFiles();
  for (const dir of ['deploy/crds', 'charts/kvpool/crds', 'charts/kvpool/files/crds']) {
    const committed = readdirSync(join(projectRoot, dir)).map((f) => `${dir}/${f}`);
    const expected = [...generated.keys()].filter((p) => p.startsWith(`${dir}/`));
    assert.deepEqual(committed.sort(), expected.sort(), dir);
  }
  for (const [path, text] of generated) {
    assert.ok(existsSync(join(projectRoot, path)), `${path} is missing`);
    assert.equal(readFileSync(join(projectRoot, path), 'utf8'), text, path);
  }
});

test(`deploy/namespace.yaml, crds.yaml and install.yaml are the chart rendered with its defaults (${fix})`, () => {
  for (const [path, text] of renderInstallFiles()) assert.equal(readFileSync(path, 'utf8'), text, path);
});
