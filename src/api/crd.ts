// Renders a CustomResourceDefinition from a kind's definition. The schemas in src/api are the single
// source of truth: deploy/crds is generated from here and a test fails when it is stale.
import type { KubeObject } from '../kube/object.ts';
import { category, type KindDefinition, type KindName, kinds } from './kinds.ts';

/** Drops TypeBox's symbol markers and returns plain JSON Schema. */
function plain(schema: unknown): Record<string, unknown> {
  return JSON.parse(JSON.stringify(schema));
}

export type CustomResourceDefinition = KubeObject & { spec: Record<string, unknown> };

export function renderCrd(def: KindDefinition): CustomResourceDefinition {
  const properties: Record<string, unknown> = {
    apiVersion: { type: 'string' },
    kind: { type: 'string' },
    metadata: { type: 'object' },
    spec: plain(def.spec),
  };
  if (def.status) properties.status = plain(def.status);
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `${def.plural}.${def.group}` },
    spec: {
      group: def.group,
      names: {
        kind: def.kind,
        listKind: `${def.kind}List`,
        plural: def.plural,
        singular: def.singular,
        ...(def.shortNames.length ? { shortNames: [...def.shortNames] } : {}),
        categories: [category],
      },
      scope: def.scope,
      versions: [
        {
          name: def.version,
          served: true,
          storage: true,
          ...(def.status ? { subresources: { status: {} } } : {}),
          additionalPrinterColumns: def.columns.map((c) => ({ ...c })),
          schema: {
            openAPIV3Schema: {
              type: 'object',
              properties,
              required: def.specRequired ? ['spec'] : [],
            },
          },
        },
      ],
    },
  };
}

export function renderAllCrds(): { kind: KindName; crd: CustomResourceDefinition }[] {
  return (Object.keys(kinds) as KindName[]).map((kind) => ({ kind, crd: renderCrd(kinds[kind]) }));
}
