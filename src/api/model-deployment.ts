// ModelDeployment: a served model and its roles (namespaced). ModelDeployment spec §1; KV-cache spec §1.4/§3.4.
import {
  AtomicList,
  cel,
  dns1123Label,
  EnvVar,
  immutable,
  LocalObjectReference,
  MapList,
  phaseFields,
  Quantity,
  type Static,
  StringEnum,
  Type,
} from './schema.ts';

export const engineNames = ['vLLM', 'SGLang'] as const;
export type EngineName = (typeof engineNames)[number];
export const roleKinds = ['Server', 'Prefill', 'Decode'] as const;

const frozen = (field: string) =>
  cel(immutable(field, 'it is part of the deployment’s identity; create a new ModelDeployment instead'));

const Resources = Type.Object({
  accelerator: Type.Optional(Quantity()),
  acceleratorSlicedMemoryPercentage: Type.Optional(
    Type.Integer({ format: 'int32', minimum: 1, maximum: 100 }),
  ),
  acceleratorSlicedCoresPercentage: Type.Optional(
    Type.Integer({ format: 'int32', minimum: 1, maximum: 100 }),
  ),
  acceleratorPartitionedProfile: Type.Optional(Type.String({ maxLength: 63 })),
  interface: Type.Optional(Type.Integer({ format: 'int32', minimum: 1, maximum: 64 })),
});

const Port = Type.Object({
  port: Type.Integer({ format: 'int32', minimum: 1, maximum: 65535 }),
  protocol: Type.Optional(StringEnum(['TCP', 'UDP', 'SCTP'] as const, { default: 'TCP' })),
});

const Role = Type.Object({
  name: Type.String({ minLength: 1, maxLength: 63, pattern: dns1123Label }),
  kind: Type.Optional(StringEnum(roleKinds, { default: 'Server' })),
  replicas: Type.Optional(Type.Integer({ format: 'int32', minimum: 1, maximum: 1024, default: 1 })),
  size: Type.Optional(Type.Integer({ format: 'int32', minimum: 1, maximum: 64, default: 1 })),
  instanceType: Type.String({ minLength: 1, maxLength: 253 }),
  resources: Type.Optional(Resources),
  image: Type.Optional(Type.String({ minLength: 1, maxLength: 512 })),
  imagePullPolicy: Type.Optional(StringEnum(['Always', 'IfNotPresent', 'Never'] as const)),
  imagePullSecrets: Type.Optional(AtomicList(LocalObjectReference, 32)),
  privileged: Type.Optional(Type.Boolean()),
  ports: Type.Optional(AtomicList(Port, 16)),
  additionalVolumes: Type.Optional(
    AtomicList(
      Type.Unsafe<Record<string, unknown>>({ type: 'object', 'x-kubernetes-preserve-unknown-fields': true }),
      32,
    ),
  ),
  terminationGracePeriodSeconds: Type.Optional(Type.Integer({ format: 'int64', minimum: 15, maximum: 3600 })),
  shmSize: Type.Optional(Quantity()),
  extraArgs: Type.Optional(AtomicList(Type.String({ maxLength: 8192 }), 128)),
  env: Type.Optional(MapList(EnvVar, ['name'], 128)),
  command: Type.Optional(AtomicList(Type.String({ maxLength: 8192 }), 128)),
});
export type ModelDeploymentRole = Static<typeof Role>;

const KVCache = Type.Object({
  poolRef: Type.Object({
    name: Type.String({
      maxLength: 253,
      ...cel({
        rule: "self != ''",
        message:
          'spec.kvCache.poolRef.name must name a KVCachePoolBinding in this namespace; ask an administrator for one if none exists',
      }),
    }),
  }),
  connector: Type.Optional(StringEnum(['Mooncake'] as const, { default: 'Mooncake' })),
});

export const ModelDeploymentSpec = Type.Object(
  {
    model: Type.Object(
      {
        name: Type.String({ minLength: 1, maxLength: 253 }),
        artifactRef: Type.Optional(Type.Object({ name: Type.String({ minLength: 1, maxLength: 253 }) })),
      },
      frozen('spec.model'),
    ),
    engine: Type.Object({
      name: StringEnum(engineNames, frozen('spec.engine.name')),
      version: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
      image: Type.Optional(Type.String({ minLength: 1, maxLength: 512 })),
    }),
    kvCache: Type.Optional(KVCache),
    kvTransfer: Type.Optional(
      Type.Object({
        protocol: Type.Optional(StringEnum(['Auto', 'TCP', 'RDMA', 'EFA', 'CANN', 'ROCM'] as const)),
      }),
    ),
    router: Type.Optional(
      Type.Object({
        name: StringEnum(['llm-d-router', 'vllm-router', 'sglang-gateway'] as const),
        replicas: Type.Optional(Type.Integer({ format: 'int32', minimum: 1, maximum: 16 })),
        image: Type.Optional(Type.String({ minLength: 1, maxLength: 512 })),
        extraArgs: Type.Optional(AtomicList(Type.String({ maxLength: 8192 }), 64)),
      }),
    ),
    roles: MapList(Role, ['name'], 10, {
      minItems: 1,
      ...cel(
        {
          rule: "!self.exists(r, has(r.kind) && r.kind == 'Server') || self.all(r, !has(r.kind) || r.kind == 'Server')",
          message:
            'spec.roles: a Server role cannot be mixed with Prefill or Decode roles; split them into separate deployments',
        },
        {
          rule: "self.filter(r, has(r.kind) && r.kind == 'Prefill').size() <= 1 && self.filter(r, has(r.kind) && r.kind == 'Decode').size() <= 1",
          message:
            'spec.roles: only Server roles may repeat; declare at most one Prefill and one Decode role',
        },
        {
          rule: 'oldSelf.all(o, !self.exists(r, r.name == o.name) || self.exists(r, r.name == o.name && (has(r.kind) ? r.kind : "Server") == (has(o.kind) ? o.kind : "Server")))',
          message: 'spec.roles[].kind is immutable for a role name; add a role under a new name instead',
        },
      ),
    }),
  },
  cel({
    rule: 'has(self.kvCache) == has(oldSelf.kvCache) && (!has(self.kvCache) || self.kvCache == oldSelf.kvCache)',
    message:
      'spec.kvCache is immutable (it decides which cache the replicas share): create a new ModelDeployment with the cache you want',
    fieldPath: '.kvCache',
  }),
);
export type ModelDeploymentSpec = Static<typeof ModelDeploymentSpec>;

const RoleStatus = Type.Object({
  name: Type.String({ maxLength: 63 }),
  kind: Type.Optional(Type.String({ maxLength: 16 })),
  desired: Type.Optional(Type.Integer({ format: 'int32' })),
  ready: Type.Optional(Type.Integer({ format: 'int32' })),
  unmanaged: Type.Optional(Type.Boolean()),
});

export const ModelDeploymentStatus = Type.Object({
  ...phaseFields,
  observedGeneration: Type.Optional(Type.Integer({ format: 'int64' })),
  roles: Type.Optional(MapList(RoleStatus, ['name'], 10)),
  roleSummary: Type.Optional(Type.String({ maxLength: 64 })),
  endpoint: Type.Optional(Type.String({ maxLength: 512 })),
  kvCache: Type.Optional(
    Type.Object({
      binding: Type.String({ maxLength: 253 }),
      pool: Type.Optional(Type.String({ maxLength: 253 })),
      domain: Type.Optional(
        Type.Object({
          name: Type.String({ maxLength: 63 }),
          blockSize: Type.Optional(Type.Integer({ format: 'int32' })),
          dtype: Type.Optional(Type.String({ maxLength: 32 })),
        }),
      ),
    }),
  ),
});
export type ModelDeploymentStatus = Static<typeof ModelDeploymentStatus>;
