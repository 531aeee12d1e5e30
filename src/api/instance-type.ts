// InstanceType: a class of node a role runs on (cluster-scoped); docs/on-your-cluster.md has an example.
import { cel, phaseFields, Quantity, type Static, Type } from './schema.ts';

const forDisplay = 'Informational: this operator reads it nowhere.';
const immutable = 'Immutable.';

const Capacity = (what: string) =>
  Type.Object(
    {
      capacity: Type.Optional(
        Type.Integer({ format: 'int64', description: `How many ${what} the type has in all.` }),
      ),
      onceMaxRequest: Type.Optional(
        Type.Integer({ format: 'int64', description: `Most ${what} one Pod can be given.` }),
      ),
      remaining: Type.Optional(
        Type.Integer({ format: 'int64', description: `How many ${what} are not handed out yet.` }),
      ),
    },
    { description: `Availability of ${what}.` },
  );

export const InstanceTypeSpec = Type.Object(
  {
    acceleratable: Type.Optional(
      Type.Boolean({
        default: false,
        description: `Whether the nodes have accelerator cards. Defaults to false. ${immutable}`,
      }),
    ),
    acceleratorGroup: Type.Optional(
      Type.String({
        maxLength: 63,
        description: `The accelerator class, for example nvidia-a10g; required when acceleratable is true. ${immutable}`,
      }),
    ),
    generalGroup: Type.Optional(
      Type.String({
        maxLength: 63,
        default: 'generic',
        description: `The general-purpose node class. Defaults to generic. ${forDisplay}`,
      }),
    ),
    os: Type.String({
      minLength: 1,
      maxLength: 32,
      description: `Operating system of the nodes, for example linux. ${immutable}`,
    }),
    arch: Type.String({
      minLength: 1,
      maxLength: 32,
      description: `CPU architecture of the nodes, for example amd64. ${immutable}`,
    }),
    manufacturer: Type.Optional(
      Type.String({
        maxLength: 63,
        description: `Accelerator maker; picks the device resource a role's cards are requested by: nvidia (nvidia.com/gpu, also when unset), amd (amd.com/gpu), ascend or huawei (huawei.com/npu), hygon (hygon.com/dcu). vLLM runs as vLLM-Ascend on ascend. ${immutable}`,
      }),
    ),
    product: Type.Optional(
      Type.String({ maxLength: 128, description: `Accelerator product name. ${forDisplay}` }),
    ),
    family: Type.Optional(Type.String({ maxLength: 63, description: `Accelerator family. ${forDisplay}` })),
    memory: Type.Optional(Quantity({ description: `Memory of one card, for example 24Gi. ${forDisplay}` })),
    cores: Type.Optional(
      Type.Integer({ format: 'int32', minimum: 0, description: `Cores of one card. ${forDisplay}` }),
    ),
    unitResources: Type.Object(
      {
        cpu: Quantity({
          description: 'CPU per unit, for example 8; exactly 1 on a CPU-only type (acceleratable: false).',
        }),
        ram: Quantity({ description: 'Memory per unit, for example 64Gi.' }),
      },
      {
        description: `What one unit (one card, or the single unit of a CPU-only role) brings: a role's Pod limits are these × its cards (at least 1). ${immutable}`,
      },
    ),
    localStorage: Quantity({
      description: `Local storage of one unit, for example 100Gi; not turned into an ephemeral-storage limit. ${immutable}`,
    }),
    displayName: Type.Optional(
      Type.String({ maxLength: 128, description: `A name for people. ${forDisplay}` }),
    ),
    inactive: Type.Optional(Type.Boolean({ description: `Marks the type retired; editable. ${forDisplay}` })),
  },
  {
    description:
      'The hardware a node of this class offers. acceleratable, acceleratorGroup, os, arch, manufacturer, unitResources and localStorage are immutable: create a new InstanceType instead.',
    ...cel(
      {
        rule: '!self.acceleratable || (has(self.acceleratorGroup) && self.acceleratorGroup != "")',
        message: 'spec.acceleratorGroup is required when spec.acceleratable is true, for example nvidia-a10g',
      },
      {
        rule: "self.acceleratable || quantity(string(self.unitResources.cpu)).compareTo(quantity('1')) == 0",
        message: 'spec.unitResources.cpu must be exactly 1 on a CPU-only InstanceType (acceleratable: false)',
      },
      {
        rule: 'self.acceleratable == oldSelf.acceleratable && self.os == oldSelf.os && self.arch == oldSelf.arch && self.unitResources == oldSelf.unitResources && self.localStorage == oldSelf.localStorage && (has(self.acceleratorGroup) ? self.acceleratorGroup : "") == (has(oldSelf.acceleratorGroup) ? oldSelf.acceleratorGroup : "") && (has(self.manufacturer) ? self.manufacturer : "") == (has(oldSelf.manufacturer) ? oldSelf.manufacturer : "")',
        message:
          'spec fields other than displayName and inactive are immutable: an InstanceType describes fixed hardware; create a new InstanceType instead',
      },
    ),
  },
);
export type InstanceTypeSpec = Static<typeof InstanceTypeSpec>;

const column = (maxLength: number, description: string) =>
  Type.Optional(Type.String({ maxLength, description }));

export const InstanceTypeStatus = Type.Object(
  {
    ...phaseFields({
      phase: 'Active or Inactive.',
      conditions: 'Whatever the component managing the type reports; this operator writes none.',
    }),
    entrance: column(63, 'The queue that Pods of this type are admitted through (the ENTRANCE column).'),
    unit: column(64, 'Unit CPU/RAM/storage as one string, for example 8/64Gi/100Gi (the UNIT column).'),
    acceleratorSummary: column(
      128,
      'Cards as onceMaxRequest/remaining, for exclusive, shared, sliced and partitioned cards (the ACCELERATOR column).',
    ),
    cpuSummary: column(64, 'CPU remaining/capacity (the CPU column).'),
    accelerator: Type.Optional(Capacity('exclusive cards')),
    acceleratorShared: Type.Optional(Capacity('shared cards')),
    acceleratorSliced: Type.Optional(Capacity('card slices')),
    acceleratorPartitioned: Type.Optional(Capacity('card partitions')),
    cpu: Type.Optional(Capacity('CPU units')),
  },
  {
    description:
      'What the component that manages this class of node reports about it; this operator writes none of it and reads none of it.',
  },
);
export type InstanceTypeStatus = Static<typeof InstanceTypeStatus>;
