// InstanceType: a class of node a role runs on (cluster-scoped). ModelDeployment spec §4.
import { cel, phaseFields, Quantity, type Static, Type } from './schema.ts';

const Capacity = Type.Object({
  capacity: Type.Optional(Type.Integer({ format: 'int64' })),
  onceMaxRequest: Type.Optional(Type.Integer({ format: 'int64' })),
  remaining: Type.Optional(Type.Integer({ format: 'int64' })),
});

export const InstanceTypeSpec = Type.Object(
  {
    acceleratable: Type.Optional(Type.Boolean({ default: false })),
    acceleratorGroup: Type.Optional(Type.String({ maxLength: 63 })),
    generalGroup: Type.Optional(Type.String({ maxLength: 63, default: 'generic' })),
    os: Type.String({ minLength: 1, maxLength: 32 }),
    arch: Type.String({ minLength: 1, maxLength: 32 }),
    manufacturer: Type.Optional(Type.String({ maxLength: 63 })),
    product: Type.Optional(Type.String({ maxLength: 128 })),
    family: Type.Optional(Type.String({ maxLength: 63 })),
    memory: Type.Optional(Quantity()),
    cores: Type.Optional(Type.Integer({ format: 'int32', minimum: 0 })),
    unitResources: Type.Object({ cpu: Quantity(), ram: Quantity() }),
    localStorage: Quantity(),
    displayName: Type.Optional(Type.String({ maxLength: 128 })),
    inactive: Type.Optional(Type.Boolean()),
  },
  cel(
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
);
export type InstanceTypeSpec = Static<typeof InstanceTypeSpec>;

export const InstanceTypeStatus = Type.Object({
  ...phaseFields,
  entrance: Type.Optional(Type.String({ maxLength: 63 })),
  unit: Type.Optional(Type.String({ maxLength: 64 })),
  acceleratorSummary: Type.Optional(Type.String({ maxLength: 128 })),
  cpuSummary: Type.Optional(Type.String({ maxLength: 64 })),
  accelerator: Type.Optional(Capacity),
  acceleratorShared: Type.Optional(Capacity),
  acceleratorSliced: Type.Optional(Capacity),
  acceleratorPartitioned: Type.Optional(Capacity),
  cpu: Type.Optional(Capacity),
});
export type InstanceTypeStatus = Static<typeof InstanceTypeStatus>;
