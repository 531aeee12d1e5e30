// docs/api-reference.md is the schemas rendered: it fails when a schema changed and the reference was
// not regenerated, and every field of every kind's spec and status is in it.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { projectRoot } from '../../images/toolchain.ts';
import { renderApiReference } from '../../scripts/api-reference.ts';
import { renderAllCrds } from '../../src/api/crd.ts';
import { storeImageExample } from '../../src/api/setting.ts';

interface Schema {
  properties?: Record<string, Schema>;
  items?: Schema;
}

function paths(s: Schema, at: string): string[] {
  return Object.entries(s.properties ?? {}).flatMap(([name, child]) => [
    `${at}.${name}`,
    ...paths(child, `${at}.${name}`),
    ...paths(child.items ?? {}, `${at}.${name}[]`),
  ]);
}

describe('docs/api-reference.md', () => {
  const committed = readFileSync(join(projectRoot, 'docs', 'api-reference.md'), 'utf8');

  it('is what the schemas render (run `npm run manifests` after a schema change)', () => {
    assert.equal(committed, renderApiReference());
  });

  it('gives the store image fields a kvpool-store image as their example, never a plain Mooncake one', () => {
    const image = committed
      .split('\n')
      .find((l) => l.startsWith('| `spec.image` | string | Image of the leader'));
    assert.ok(image?.includes(`for example ${storeImageExample}`), image);
    assert.match(storeImageExample, /\/kvpool\/kvpool-store:/);
    assert.doesNotMatch(committed, /for example [\w./-]*\/mooncake:/);
  });

  it('documents every field of every kind', () => {
    for (const { kind, crd } of renderAllCrds()) {
      assert.match(committed, new RegExp(`^## ${kind}$`, 'm'));
      const root = (crd.spec.versions as { schema: { openAPIV3Schema: Schema } }[])[0]!.schema
        .openAPIV3Schema;
      for (const part of ['spec', 'status'] as const) {
        for (const p of paths(root.properties?.[part] ?? {}, part))
          assert.ok(committed.includes(`| \`${p}\``), `${kind}: ${p} is not in the reference`);
      }
    }
  });
});
