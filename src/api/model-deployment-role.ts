// One role of a ModelDeployment: rendered as a Deployment `<md>-<role>` and a Service of the same name
// (docs/decisions/0008-modeldeployment-workloads.md).
import type { Volume, VolumeMount } from 'kubernetes-types/core/v1.js';
import { placementFields } from './placement.ts';
import {
  AtomicList,
  cel,
  dns1123Label,
  EnvVar,
  LocalObjectReference,
  MapList,
  Quantity,
  type Static,
  StringEnum,
  Type,
} from './schema.ts';

export const roleKinds = ['Server', 'Prefill', 'Decode'] as const;

const notActedOn = 'Stored, but this operator does not act on it yet.';

/**
 * Why a role may not ask for what Pod Security 'baseline' forbids:
 * docs/decisions/0029-modeldeployment-is-not-a-deputy.md.
 */
const baselineRule =
  "the operator creates engine Pods with its own rights, so a ModelDeployment may not ask for what Pod Security 'baseline' forbids";
const ownDeployment =
  'run such an engine as your own Deployment whose Pods carry kvcache.gpustack.ai/inject=true (created with your rights, the cache injected all the same)';
export const privilegedRefusal = `${baselineRule}; remove privileged, or ${ownDeployment}`;
export const hostPathRefusal = `${baselineRule}; mount the data from a persistentVolumeClaim instead, or ${ownDeployment}`;

const Resources = Type.Object(
  {
    accelerator: Type.Optional(
      Quantity({
        description:
          "Accelerator cards per Pod, a whole number. Unset: 1 on an acceleratable InstanceType, 0 on a CPU-only one. The Pod's limits are the InstanceType's unitResources × max(cards, 1), plus the cards of the manufacturer's device resource (none on a CPU-only type).",
      }),
    ),
    acceleratorSlicedMemoryPercentage: Type.Optional(
      Type.Integer({
        format: 'int32',
        minimum: 1,
        maximum: 100,
        description: `Share of one card's memory, in percent, for a sliced card. ${notActedOn}`,
      }),
    ),
    acceleratorSlicedCoresPercentage: Type.Optional(
      Type.Integer({
        format: 'int32',
        minimum: 1,
        maximum: 100,
        description: `Share of one card's cores, in percent, for a sliced card. ${notActedOn}`,
      }),
    ),
    acceleratorPartitionedProfile: Type.Optional(
      Type.String({ maxLength: 63, description: `Partition profile of a partitioned card. ${notActedOn}` }),
    ),
    interface: Type.Optional(
      Type.Integer({
        format: 'int32',
        minimum: 1,
        maximum: 64,
        description: `Fabric interfaces (RDMA or EFA) per Pod, 1 to 64. ${notActedOn}`,
      }),
    ),
  },
  {
    description:
      "What each Pod gets beyond the InstanceType's defaults. Requests are 100m CPU and 128Mi per unit while the Setting instance-general-resources-overcommit is true (the default), else equal to the limits.",
  },
);

const Port = Type.Object({
  port: Type.Integer({
    format: 'int32',
    minimum: 1,
    maximum: 65535,
    description: 'Container port number, 1 to 65535.',
  }),
  protocol: Type.Optional(
    StringEnum(['TCP', 'UDP', 'SCTP'] as const, {
      default: 'TCP',
      description: 'TCP, UDP or SCTP. Defaults to TCP. A first port that is not TCP gets no health probes.',
    }),
  ),
});

const argv = (maxItems: number, description: string) =>
  Type.Optional(AtomicList(Type.String({ maxLength: 8192 }), maxItems, { description }));

const Role = Type.Object({
  name: Type.String({
    minLength: 1,
    maxLength: 63,
    pattern: dns1123Label,
    description:
      "The role's name, a DNS-1123 label; its Deployment and Service are named <deployment>-<role>.",
  }),
  kind: Type.Optional(
    StringEnum(roleKinds, {
      default: 'Server',
      description:
        'Server (serves requests whole), Prefill or Decode. Defaults to Server. With a cache, a vLLM Prefill role only writes to it (kv_producer) and a Decode role only reads (kv_consumer). Immutable for a role name.',
    }),
  ),
  replicas: Type.Optional(
    Type.Integer({
      format: 'int32',
      minimum: 1,
      maximum: 1024,
      default: 1,
      description:
        'Replicas of the role, 1 to 1024. Defaults to 1. Editable; template changes replace one replica at a time, never running more than declared.',
    }),
  ),
  size: Type.Optional(
    Type.Integer({
      format: 'int32',
      minimum: 1,
      maximum: 64,
      default: 1,
      description:
        'Pods per replica. Defaults to 1, and admission refuses any other value: this operator runs one Pod per replica.',
    }),
  ),
  instanceType: Type.String({
    minLength: 1,
    maxLength: 253,
    description:
      'The InstanceType the role runs on; its unitResources and manufacturer decide the Pod resources. One that does not exist is admitted with a warning, and no replica runs until it does.',
  }),
  resources: Type.Optional(Resources),
  ...placementFields('the role'),
  image: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 512,
      description: "The engine container's image; overrides spec.engine.image and spec.engine.version.",
    }),
  ),
  imagePullPolicy: Type.Optional(
    StringEnum(['Always', 'IfNotPresent', 'Never'] as const, {
      description: "Pull policy of the engine container; unset leaves Kubernetes' default.",
    }),
  ),
  imagePullSecrets: Type.Optional(
    AtomicList(LocalObjectReference, 32, {
      description: "Secrets in this namespace that the role's Pods pull images with.",
    }),
  ),
  privileged: Type.Optional(
    Type.Boolean({
      description:
        'Refused when true, by the schema and by admission (docs/decisions/0029); kept so that deployments stored before the rule still read.',
      ...cel({ rule: '!self', message: privilegedRefusal }),
    }),
  ),
  automountServiceAccountToken: Type.Optional(
    Type.Boolean({
      description:
        "Mounts a token of the namespace's default service account into the engine Pods when true. Unset or false mounts none: an engine does not call the Kubernetes API. No other service account can be named (docs/decisions/0029). Changing it replaces the replicas one at a time.",
    }),
  ),
  ports: Type.Optional(
    AtomicList(Port, 16, {
      description:
        "Ports the engine serves on. The first (default 8000) is the serving port: the role's Service and health probes target it, and the engine is given --port with it unless extraArgs set --port (refused when it differs from a declared first port).",
    }),
  ),
  additionalVolumes: Type.Optional(
    AtomicList(
      // Kept as written (the apiserver validates the volume when the Deployment is applied); hostPath is
      // declared only so that the rule below can see it.
      Type.Unsafe<Volume & Partial<Pick<VolumeMount, 'mountPath' | 'readOnly' | 'subPath'>>>({
        type: 'object',
        'x-kubernetes-preserve-unknown-fields': true,
        properties: {
          hostPath: {
            type: 'object',
            'x-kubernetes-preserve-unknown-fields': true,
            description:
              "Refused, by the schema and by admission (docs/decisions/0029): a node's directory reaches the engine as a persistentVolumeClaim, of a local PersistentVolume an administrator creates.",
          },
        },
      }),
      32,
      {
        description:
          'Extra Pod volumes, each a core/v1 Volume plus optional mountPath, readOnly and subPath; one with mountPath is mounted there in the engine container. A hostPath volume is refused.',
        ...cel({
          rule: 'self.all(v, !has(v.hostPath))',
          message: `additionalVolumes[].hostPath: ${hostPathRefusal}`,
        }),
      },
    ),
  ),
  terminationGracePeriodSeconds: Type.Optional(
    Type.Integer({
      format: 'int64',
      minimum: 15,
      maximum: 3600,
      description: 'Seconds a Pod gets to stop after SIGTERM, 15 to 3600. Unset means 30.',
    }),
  ),
  shmSize: Type.Optional(
    Quantity({
      description: 'Size of a memory-backed /dev/shm for the engine (for example 16Gi); unset mounts none.',
    }),
  ),
  extraArgs: argv(
    128,
    'Arguments after the operator’s argv (entry point, model, --served-model-name, --host 0.0.0.0, --port, cache flags); ignored when command is set. Admission refuses, in any spelling the engine reads, the connector flags (vLLM --kv-transfer-config, --kv-events-config; SGLang --hicache-storage-backend, --hicache-storage-backend-extra-config, --disaggregation-mode, --disaggregation-transfer-backend, --disaggregation-bootstrap-port), with a cache also --block-size or --page-size and (while the Setting model-deployment-kv-cache-dtype-owned is true) --kv-cache-dtype, and a --served-model-name other than spec.model.name.',
  ),
  env: Type.Optional(
    MapList(EnvVar, ['name'], 128, {
      description:
        'Environment of the engine container; MC_TE_METRIC defaults to 1 unless set here. Admission refuses GPUSTACK_REPLICA_LEADER_ADDRESS, GPUSTACK_REPLICA_SIZE, GPUSTACK_MEMBER_INDEX and, unless command is set, the variables carrying the cache connection (vLLM: MOONCAKE_CONFIG_PATH, VLLM_MOONCAKE_BOOTSTRAP_PORT, MOONCAKE_TENANT_ID; SGLang: SGLANG_HICACHE_MOONCAKE_CONFIG_PATH, MOONCAKE_MASTER, MOONCAKE_TE_META_DATA_SERVER, MOONCAKE_PROTOCOL, MOONCAKE_DEVICE, MOONCAKE_GLOBAL_SEGMENT_SIZE, MOONCAKE_LOCAL_HOSTNAME, MOONCAKE_TENANT_ID). With command set, a store tenant named here (MOONCAKE_TENANT_ID, or tenant_id in a value) must be the domain of the Binding spec.kvCache.poolRef names.',
    }),
  ),
  command: argv(
    128,
    "Takes over the whole argv, used verbatim: no operator arguments, cache configuration or health probes, and the role's status says unmanaged. Admission refuses a store tenant it names (MOONCAKE_TENANT_ID=, tenant_id in an inline config) other than the domain of the Binding spec.kvCache.poolRef names.",
  ),
});

export { Role };
export type ModelDeploymentRole = Static<typeof Role>;
