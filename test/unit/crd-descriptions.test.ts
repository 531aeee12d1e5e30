// Every field of every kind documents itself, as `kubectl explain` prints it: a property without a
// description fails, and so does one whose default or immutability the description does not state.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { renderAllCrds } from '../../src/api/crd.ts';

interface Schema {
  type?: string;
  description?: string;
  default?: unknown;
  properties?: Record<string, Schema>;
  items?: Schema;
  additionalProperties?: Schema | boolean;
  'x-kubernetes-validations'?: { rule: string }[];
}

/** What is missing from the description of the property at `path`, if anything. */
function descriptionProblems(prop: Schema, path: string): string[] {
  const text = prop.description?.trim();
  if (!text) return [`${path}: no description`];
  const problems: string[] = [];
  const value = prop.default;
  if (value !== undefined && typeof value !== 'object' && !text.includes(`Defaults to ${value}`)) {
    problems.push(`${path}: the default ${value} is not stated ("Defaults to ${value}")`);
  }
  const frozen = prop['x-kubernetes-validations']?.some((r) => r.rule === 'self == oldSelf');
  if (frozen && !/immutable/i.test(text))
    problems.push(`${path}: immutable, but the description does not say so`);
  return problems;
}

/** Problems of every property below `schema`, through objects, list items and map values. */
export function undocumented(schema: Schema, path: string): string[] {
  const out: string[] = [];
  for (const [name, prop] of Object.entries(schema.properties ?? {})) {
    const at = `${path}.${name}`;
    out.push(...descriptionProblems(prop, at), ...undocumented(prop, at));
  }
  if (schema.items) out.push(...undocumented(schema.items, `${path}[]`));
  if (typeof schema.additionalProperties === 'object') {
    out.push(...undocumented(schema.additionalProperties, `${path}{}`));
  }
  return out;
}

function rootSchema(crd: ReturnType<typeof renderAllCrds>[number]['crd']): Schema {
  const versions = crd.spec.versions as { schema: { openAPIV3Schema: Schema } }[];
  return versions[0]!.schema.openAPIV3Schema;
}

describe('CRD field descriptions', () => {
  it('finds an undocumented property however deep it sits', () => {
    const schema: Schema = {
      properties: {
        a: {
          description: 'documented',
          properties: { list: { description: 'a list', items: { properties: { deep: {} } } } },
        },
        b: { description: 'a map', additionalProperties: { properties: { value: {} } } },
        c: { description: 'says nothing of its default', default: 'Auto' },
        d: { description: 'says nothing', 'x-kubernetes-validations': [{ rule: 'self == oldSelf' }] },
      },
    };
    assert.deepEqual(undocumented(schema, 'x'), [
      'x.a.list[].deep: no description',
      'x.b{}.value: no description',
      'x.c: the default Auto is not stated ("Defaults to Auto")',
      'x.d: immutable, but the description does not say so',
    ]);
  });

  for (const { kind, crd } of renderAllCrds()) {
    it(`${kind}: the kind and every property carry a description`, () => {
      const root = rootSchema(crd);
      assert.ok(root.description?.trim(), `${kind} has no description of its own`);
      // The apiserver refuses a description on metadata and explains it as ObjectMeta itself.
      const { metadata, ...fields } = root.properties ?? {};
      assert.deepEqual(metadata, { type: 'object' });
      assert.deepEqual(undocumented({ ...root, properties: fields }, kind), []);
    });
  }
});
