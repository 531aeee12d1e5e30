// Renders a CustomResourceDefinition from a kind's definition. The schemas in src/api are the single
// source of truth: deploy/crds is generated from here and a test fails when it is stale.
import type { CustomResourceDefinition, JSONSchemaProps } from 'kubernetes-types/apiextensions/v1.js';
import type { KubeObject } from '../kube/object.ts';
import { type KindDefinition, type KindName, kinds } from './kinds.ts';

/** Drops TypeBox's symbol markers and returns the plain JSON Schema the CRD carries. */
function plain(schema: unknown): JSONSchemaProps {
  return JSON.parse(JSON.stringify(schema));
}

/** The fields every object has, described as kubectl explain prints them. */
function objectFields(def: KindDefinition): Record<string, JSONSchemaProps> {
  return {
    apiVersion: {
      type: 'string',
      description: `The API group and version of the object: ${def.group}/${def.version}.`,
    },
    kind: { type: 'string', description: `The kind of the object: ${def.kind}.` },
    // The apiserver refuses anything here but the type, and explains metadata as ObjectMeta itself.
    metadata: { type: 'object' },
  };
}

export function renderCrd(def: KindDefinition): KubeObject<CustomResourceDefinition> {
  const properties: Record<string, JSONSchemaProps> = { ...objectFields(def), spec: plain(def.spec) };
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
        categories: [...def.categories],
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
              description: def.description,
              properties,
              required: def.specRequired ? ['spec'] : [],
            },
          },
        },
      ],
    },
  };
}

export function renderAllCrds(): { kind: KindName; crd: KubeObject<CustomResourceDefinition> }[] {
  return (Object.keys(kinds) as KindName[]).map((kind) => ({ kind, crd: renderCrd(kinds[kind]) }));
}
