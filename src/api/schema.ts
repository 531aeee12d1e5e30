// Schema builders shared by every kind. Each returns a TypeBox schema, so one definition yields both
// the CRD's openAPIV3Schema and the TypeScript type (Static<typeof X>).
import { type SchemaOptions, type Static, type TSchema, Type } from '@sinclair/typebox';

export { type Static, Type };

/** A CEL rule as the apiserver takes it under x-kubernetes-validations. */
export interface CelRule {
  rule: string;
  message?: string;
  messageExpression?: string;
  fieldPath?: string;
  reason?: 'FieldValueInvalid' | 'FieldValueForbidden' | 'FieldValueRequired' | 'FieldValueDuplicate';
  optionalOldSelf?: boolean;
}

export function cel(...rules: CelRule[]): { 'x-kubernetes-validations': CelRule[] } {
  return { 'x-kubernetes-validations': rules };
}

/** A field that may never change once set: `self == oldSelf`. */
export function immutable(field: string, fix: string): CelRule {
  return { rule: 'self == oldSelf', message: `${field} is immutable: ${fix}` };
}

export function StringEnum<const T extends readonly string[]>(values: T, options: SchemaOptions = {}) {
  return Type.Unsafe<T[number]>({ ...options, type: 'string', enum: [...values] });
}

// The apiserver's own Quantity grammar (resource.Quantity), as generated CRDs carry it.
const quantityPattern =
  '^(\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))))?$';

/** A Kubernetes Quantity (`8Gi`, `134217728`). Extra CEL rules judge its value. */
export function Quantity(options: SchemaOptions = {}) {
  return Type.Unsafe<string | number>({
    ...options,
    'x-kubernetes-int-or-string': true,
    anyOf: [{ type: 'integer' }, { type: 'string' }],
    pattern: quantityPattern,
    maxLength: 64,
  });
}

/** CEL: a quantity that is a whole number of bytes in 1..2^63-1. */
export function positiveBytes(field: string, example: string): CelRule {
  return {
    rule: "quantity(string(self)).isInteger() && quantity(string(self)).isGreaterThan(quantity('0'))",
    message: `${field} must be a whole number of bytes greater than zero and at most 2^63-1, for example ${example}`,
  };
}

/** CEL: a quantity that is a whole number of bytes in 0..2^63-1. */
export function nonNegativeBytes(field: string, example: string): CelRule {
  return {
    rule: "quantity(string(self)).isInteger() && !quantity(string(self)).isLessThan(quantity('0'))",
    message: `${field} must be a whole number of bytes, zero or more and at most 2^63-1, for example ${example}`,
  };
}

/** A string → string map (labels, node selectors). */
export function StringMap(options: SchemaOptions = {}) {
  return Type.Unsafe<Record<string, string>>({
    ...options,
    type: 'object',
    additionalProperties: { type: 'string', maxLength: 63 },
    maxProperties: 64,
  });
}

/** A list whose items are merged by key (listType=map). */
export function MapList<T extends TSchema>(
  item: T,
  keys: string[],
  maxItems: number,
  options: SchemaOptions = {},
) {
  return Type.Array(item, {
    ...options,
    maxItems,
    'x-kubernetes-list-type': 'map',
    'x-kubernetes-list-map-keys': keys,
  });
}

/** A list replaced whole on every write (listType=atomic). */
export function AtomicList<T extends TSchema>(item: T, maxItems: number, options: SchemaOptions = {}) {
  return Type.Array(item, { ...options, maxItems, 'x-kubernetes-list-type': 'atomic' });
}

export const dns1123Label = '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$';
export const dns1123Subdomain = '^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$';

export const EnvVar = Type.Object({
  name: Type.String({ minLength: 1, maxLength: 256, description: 'Name of the environment variable.' }),
  value: Type.Optional(
    Type.String({
      maxLength: 32768,
      description:
        'Value of the variable; empty when unset. Anyone who can read this object can read it, so it must hold no credentials.',
    }),
  ),
});
export type EnvVar = Static<typeof EnvVar>;

export const LocalObjectReference = Type.Object({
  name: Type.String({
    minLength: 1,
    maxLength: 253,
    pattern: dns1123Subdomain,
    description:
      'Name of a Secret holding registry credentials (type kubernetes.io/dockerconfigjson), in the namespace of the Pods that pull the image.',
  }),
});

/** metav1.Condition, as every status here carries it. */
export const Condition = Type.Object({
  type: Type.String({
    minLength: 1,
    maxLength: 316,
    description: 'What the condition is about, in CamelCase; each type appears once in the list.',
  }),
  status: StringEnum(['True', 'False', 'Unknown'] as const, {
    description: 'True, False, or Unknown when the operator cannot tell yet.',
  }),
  reason: Type.String({
    minLength: 1,
    maxLength: 1024,
    description: 'Why the condition has its status: one CamelCase word, stable for programs to match.',
  }),
  message: Type.String({
    maxLength: 32768,
    description: 'What was observed and, when something is wrong, what to do about it, for people to read.',
  }),
  observedGeneration: Type.Optional(
    Type.Integer({
      format: 'int64',
      minimum: 0,
      description:
        'The metadata.generation of the object the condition was decided from; behind the current generation, the newest spec has not been judged yet.',
    }),
  ),
  lastTransitionTime: Type.String({
    format: 'date-time',
    description: 'When status last changed; a new reason or message alone does not move it.',
  }),
});
export type Condition = Static<typeof Condition>;

/** The conditions list of one kind; `description` names the types that kind reports. */
export function Conditions(description: string) {
  return MapList(Condition, ['type'], 32, { description });
}

/** A consumer's claim on a provider (`status.usedBy[]`). */
export const UsedByEntry = Type.Object({
  kind: Type.String({ maxLength: 63, description: 'Kind of the object that uses this one.' }),
  namespace: Type.String({
    maxLength: 63,
    description:
      "Namespace of that object; empty when it is cluster-scoped or lives in this object's own namespace.",
  }),
  name: Type.String({ maxLength: 253, description: 'Name of the object that uses this one.' }),
});
export type UsedByEntry = Static<typeof UsedByEntry>;

/**
 * The objects that use a provider; `description` says which kind and what they hold up. Atomic: the
 * status has one writer, and a pool's list of a thousand Bindings merged per item made each status
 * write several times slower on the apiserver: see
 * docs/decisions/0037-writes-in-parallel-within-a-pass-and-atomic-status-lists.md.
 */
export function UsedBy(description: string) {
  return AtomicList(UsedByEntry, 1024, { description });
}

/** The status fields every kind here shares, described for one kind. */
export function phaseFields(doc: { phase: string; conditions: string }) {
  return {
    phase: Type.Optional(Type.String({ maxLength: 32, description: doc.phase })),
    phaseMessage: Type.Optional(
      Type.String({
        maxLength: 32768,
        description:
          'Why the object is in its phase and, when something is wrong, what to do about it; read the conditions for the detail.',
      }),
    ),
    conditions: Type.Optional(Conditions(doc.conditions)),
  };
}
