// Where a workload kvpool renders may run, in the shapes of Kubernetes' own Pod fields: tolerations
// (GPU nodes are usually tainted, nvidia.com/gpu:NoSchedule), node affinity and a priority class; and
// a container's resources. Spread into a member group, the leader and a ModelDeployment role.
import { AtomicList, cel, StringEnum, StringMap, Type } from './schema.ts';

const Toleration = Type.Object(
  {
    key: Type.Optional(
      Type.String({
        maxLength: 317,
        description: 'The taint key; empty with operator Exists matches every taint.',
      }),
    ),
    operator: Type.Optional(
      StringEnum(['Exists', 'Equal'] as const, {
        description: 'Exists (any value) or Equal (the value below). Defaults to Equal.',
      }),
    ),
    value: Type.Optional(
      Type.String({ maxLength: 63, description: 'The taint value, with operator Equal.' }),
    ),
    effect: Type.Optional(
      StringEnum(['NoSchedule', 'PreferNoSchedule', 'NoExecute'] as const, {
        description: 'The taint effect to tolerate; empty tolerates every effect.',
      }),
    ),
    tolerationSeconds: Type.Optional(
      Type.Integer({
        format: 'int64',
        minimum: 0,
        description: 'With effect NoExecute: how long the Pod stays on a node once the taint appears.',
      }),
    ),
  },
  {
    description: "A core/v1 Toleration, as a Pod's spec.tolerations takes it.",
    ...cel({
      rule: "!has(self.operator) || self.operator != 'Exists' || !has(self.value) || self.value == ''",
      message: 'a toleration with operator Exists takes no value: remove value, or use operator Equal',
    }),
  },
);

const NodeSelectorRequirement = Type.Object({
  key: Type.String({ minLength: 1, maxLength: 317, description: 'A node label key.' }),
  operator: StringEnum(['In', 'NotIn', 'Exists', 'DoesNotExist', 'Gt', 'Lt'] as const, {
    description: 'How the label is compared with values.',
  }),
  values: Type.Optional(
    AtomicList(Type.String({ maxLength: 63 }), 64, { description: 'The values compared.' }),
  ),
});

const NodeSelectorTerm = Type.Object(
  {
    matchExpressions: Type.Optional(
      AtomicList(NodeSelectorRequirement, 32, {
        description: "Requirements on the node's labels, all of them.",
      }),
    ),
  },
  { description: 'A core/v1 NodeSelectorTerm (label expressions).' },
);

const NodeAffinity = Type.Object(
  {
    requiredDuringSchedulingIgnoredDuringExecution: Type.Optional(
      Type.Object(
        {
          nodeSelectorTerms: AtomicList(NodeSelectorTerm, 16, {
            minItems: 1,
            description: 'Any one of these terms.',
          }),
        },
        { description: 'Nodes the Pods may run on.' },
      ),
    ),
    preferredDuringSchedulingIgnoredDuringExecution: Type.Optional(
      AtomicList(
        Type.Object({
          weight: Type.Integer({
            format: 'int32',
            minimum: 1,
            maximum: 100,
            description: 'How much, 1 to 100.',
          }),
          preference: NodeSelectorTerm,
        }),
        16,
        { description: 'Nodes the scheduler should prefer.' },
      ),
    ),
  },
  { description: "A core/v1 NodeAffinity, as a Pod's spec.affinity.nodeAffinity takes it." },
);

/** tolerations, affinity (node affinity) and priorityClassName, for a workload `what` names. */
export function placementFields(what: string) {
  return {
    tolerations: Type.Optional(
      AtomicList(Toleration, 32, {
        description: `Tolerations of the Pods of ${what}, as a Pod takes them; for tainted nodes, for example GPU nodes tainted nvidia.com/gpu:NoSchedule. A change reaches Pods made from then on.`,
      }),
    ),
    affinity: Type.Optional(
      Type.Object(
        { nodeAffinity: Type.Optional(NodeAffinity) },
        { description: `Node affinity of the Pods of ${what}, as a Pod's spec.affinity takes it.` },
      ),
    ),
    priorityClassName: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 253,
        description: `PriorityClass of the Pods of ${what}; the class must exist.`,
        ...cel({
          rule: "self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$')",
          message: 'priorityClassName must be a PriorityClass name: lower-case letters, digits, - and .',
        }),
      }),
    ),
  };
}

const quantities = (field: string, example: string) =>
  StringMap({
    description: `Resource name to quantity, for example ${example}.`,
    ...cel({
      rule: 'self.all(k, isQuantity(self[k]))',
      message: `${field} takes quantities, for example ${example}`,
    }),
  });

/** A container's requests and limits, as core/v1 ResourceRequirements (cpu, memory, …). */
export function ContainerResources(field: string, description: string) {
  return Type.Object(
    {
      requests: Type.Optional(quantities(`${field}.requests`, 'cpu: 250m, memory: 256Mi')),
      limits: Type.Optional(quantities(`${field}.limits`, 'memory: 2Gi')),
    },
    { description },
  );
}
