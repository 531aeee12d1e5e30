// `kubectl explain` on the real apiserver prints the descriptions the schemas in src/api carry, for the
// kinds themselves and for fields deep inside them.

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { renderAllCrds } from '../../src/api/crd.ts';
import type { KindName } from '../../src/api/kinds.ts';
import { kubectl } from '../support/cluster.ts';
import { waitFor } from '../support/wait.ts';

interface Schema {
  description?: string;
  properties?: Record<string, Schema>;
  items?: Schema;
}

/** The description the rendered CRD of `kind` carries at `path` (list items are stepped through). */
function describedAt(kind: KindName, path: string[]): string {
  const crd = renderAllCrds().find((c) => c.kind === kind)!.crd;
  let schema = (crd.spec.versions as { schema: { openAPIV3Schema: Schema } }[])[0]!.schema.openAPIV3Schema;
  for (const field of path) {
    const next = (schema.items ?? schema).properties?.[field];
    assert.ok(next, `${kind} has no field ${path.join('.')}`);
    schema = next;
  }
  assert.ok(schema.description, `${kind}.${path.join('.')} has no description`);
  return schema.description;
}

/** kubectl wraps and indents text; compare words only. */
const words = (text: string) => text.replace(/\s+/g, ' ').trim();

/** `kubectl explain <target>` once its output holds every expected text (the CRD's OpenAPI is published asynchronously). */
async function explain(target: string, expected: string[]): Promise<string> {
  let last = '';
  try {
    return await waitFor(
      async () => {
        last = await kubectl(['explain', target]);
        return expected.every((e) => words(last).includes(words(e))) ? last : undefined;
      },
      { what: `kubectl explain ${target} to print the schema's descriptions`, timeoutMs: 30_000 },
    );
  } catch {
    const missing = expected.filter((e) => !words(last).includes(words(e)));
    assert.fail(`kubectl explain ${target} lacks ${JSON.stringify(missing)}; it printed:\n${last}`);
  }
}

describe('kubectl explain', () => {
  it('describes kvcb.spec.connection.managed.members and the fields of a member group', async () => {
    const members = ['spec', 'connection', 'managed', 'members'];
    const out = await explain('kvcb.spec.connection.managed.members', [
      describedAt('KVCacheBackend', members),
      describedAt('KVCacheBackend', [...members, 'capacityPerMember']),
      describedAt('KVCacheBackend', [...members, 'localDisks']),
    ]);
    assert.match(out, /^DESCRIPTION:/m);
    assert.doesNotMatch(out, /<no description>|<empty>/);
  });

  it('describes a field inside a member group’s disk tier', async () => {
    await explain('kvcb.spec.connection.managed.members.localDisks.path', [
      describedAt('KVCacheBackend', ['spec', 'connection', 'managed', 'members', 'localDisks', 'path']),
    ]);
  });

  it('describes a Binding’s domain dtype and a ModelDeployment’s cache reference', async () => {
    await explain('kvcpb.spec.domain.dtype', [
      describedAt('KVCachePoolBinding', ['spec', 'domain', 'dtype']),
    ]);
    await explain('md.spec.kvCache.poolRef.name', [
      describedAt('ModelDeployment', ['spec', 'kvCache', 'poolRef', 'name']),
    ]);
  });

  it('describes each kind at its root', async () => {
    for (const [target, kind] of [
      ['kvcb', 'KVCacheBackend'],
      ['kvcp', 'KVCachePool'],
      ['kvcpb', 'KVCachePoolBinding'],
      ['md', 'ModelDeployment'],
      ['instancetype', 'InstanceType'],
      ['settings', 'Setting'],
    ] as const) {
      await explain(target, [describedAt(kind, [])]);
    }
  });
});
