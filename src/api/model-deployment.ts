// ModelDeployment: a served model and its roles (namespaced); docs/concepts.md, Workloads.
import { Role, roleKinds } from './model-deployment-role.ts';
import { PoolPrefixStatus } from './pool-prefix.ts';
import { AtomicList, cel, immutable, MapList, phaseFields, type Static, StringEnum, Type } from './schema.ts';

export type { ModelDeploymentRole } from './model-deployment-role.ts';
export { roleKinds };

export const engineNames = ['vLLM', 'SGLang'] as const;
export type EngineName = (typeof engineNames)[number];

const notActedOn = 'Stored, but this operator does not act on it yet.';

const frozen = (field: string) =>
  cel(immutable(field, 'it is part of the deployment’s identity; create a new ModelDeployment instead'));

const KVCache = Type.Object(
  {
    poolRef: Type.Object(
      {
        name: Type.String({
          maxLength: 253,
          description:
            "Name of a KVCachePoolBinding in this namespace; empty is refused. Admission refuses, on create, a Binding whose store's member groups use several transports, and a vLLM-Ascend engine on a store that is not CANN.",
          ...cel({
            rule: "self != ''",
            message:
              'spec.kvCache.poolRef.name must name a KVCachePoolBinding in this namespace; ask an administrator for one if none exists',
          }),
        }),
      },
      {
        description:
          "The KVCachePoolBinding whose reuse domain the replicas share: its domain becomes the engines' tenant and its blockSize and dtype their block size and KV-cache dtype.",
      },
    ),
    connector: Type.Optional(
      StringEnum(['Mooncake'] as const, {
        default: 'Mooncake',
        description: 'The store client the engines use; Mooncake is the only one. Defaults to Mooncake.',
      }),
    ),
  },
  {
    description:
      'The shared KV cache of every managed role; omitted, the deployment uses none. Immutable as a whole (added, removed or changed), since it decides which cache the replicas share: create a new ModelDeployment instead.',
  },
);

const Router = Type.Object(
  {
    name: StringEnum(['llm-d-router', 'vllm-router', 'sglang-gateway'] as const, {
      description: 'Which router: llm-d-router, vllm-router or sglang-gateway.',
    }),
    replicas: Type.Optional(
      Type.Integer({ format: 'int32', minimum: 1, maximum: 16, description: 'Router replicas, 1 to 16.' }),
    ),
    image: Type.Optional(Type.String({ minLength: 1, maxLength: 512, description: "The router's image." })),
    extraArgs: Type.Optional(
      AtomicList(Type.String({ maxLength: 8192 }), 64, { description: 'Extra arguments of the router.' }),
    ),
  },
  { description: `A request router in front of the roles. ${notActedOn}` },
);

export const ModelDeploymentSpec = Type.Object(
  {
    model: Type.Object(
      {
        name: Type.String({
          minLength: 1,
          maxLength: 253,
          description:
            'The model to serve, for example Qwen/Qwen2.5-7B-Instruct: what the engine loads (vllm serve <name>, SGLang --model-path <name>) and the name clients ask for (--served-model-name). The engine fetches it; the operator provisions nothing.',
        }),
        artifactRef: Type.Optional(
          Type.Object(
            {
              name: Type.String({
                minLength: 1,
                maxLength: 253,
                description: 'Name of the ModelArtifact in this namespace.',
              }),
            },
            { description: `A ModelArtifact with pinned weights. ${notActedOn}` },
          ),
        ),
      },
      {
        description: 'The model served. Immutable: it is part of the deployment’s identity.',
        ...frozen('spec.model'),
      },
    ),
    engine: Type.Object(
      {
        name: StringEnum(engineNames, {
          description:
            'vLLM or SGLang. On an InstanceType whose manufacturer is ascend, vLLM runs as vLLM-Ascend. Immutable.',
          ...frozen('spec.engine.name'),
        }),
        version: Type.Optional(
          Type.String({
            minLength: 1,
            maxLength: 64,
            description:
              'Engine version, for example 0.29.0: roles naming no image run gpustack/runner:vllm<version> or gpustack/runner:sglang<version>. Admission refuses a role with no image when neither this nor engine.image is set.',
          }),
        ),
        image: Type.Optional(
          Type.String({
            minLength: 1,
            maxLength: 512,
            description: 'Image of every role that names none; takes precedence over version.',
          }),
        ),
      },
      { description: 'The serving engine.' },
    ),
    kvCache: Type.Optional(KVCache),
    kvTransfer: Type.Optional(
      Type.Object(
        {
          protocol: Type.Optional(
            StringEnum(['Auto', 'TCP', 'RDMA', 'EFA', 'CANN', 'ROCM'] as const, {
              description: `Transport of the direct Prefill-to-Decode leg: Auto, TCP, RDMA, EFA, CANN or ROCM. ${notActedOn}`,
            }),
          ),
        },
        {
          description: `The direct KV transfer between Prefill and Decode roles (not the store). ${notActedOn}`,
        },
      ),
    ),
    router: Type.Optional(Router),
    roles: MapList(Role, ['name'], 10, {
      minItems: 1,
      description:
        'The roles, 1 to 10, keyed by name; each is a Deployment and a Service <deployment>-<role>. Server roles may repeat but cannot be mixed with Prefill or Decode roles, of which there is at most one each.',
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
  {
    description: 'The model, the engine, the optional shared cache and the roles that serve.',
    ...cel({
      rule: 'has(self.kvCache) == has(oldSelf.kvCache) && (!has(self.kvCache) || self.kvCache == oldSelf.kvCache)',
      message:
        'spec.kvCache is immutable (it decides which cache the replicas share): create a new ModelDeployment with the cache you want',
      fieldPath: '.kvCache',
    }),
  },
);
export type ModelDeploymentSpec = Static<typeof ModelDeploymentSpec>;

const count = (description: string) => Type.Optional(Type.Integer({ format: 'int32', description }));

const RoleStatus = Type.Object({
  name: Type.String({ maxLength: 63, description: 'The role’s name.' }),
  kind: Type.Optional(Type.String({ maxLength: 16, description: 'Server, Prefill or Decode.' })),
  desired: count('Replicas declared.'),
  ready: count('Replicas whose Pod is ready (for a managed role: its engine answers GET /health).'),
  unmanaged: Type.Optional(
    Type.Boolean({ description: 'True when the role takes over its argv with command; absent otherwise.' }),
  ),
});

export const ModelDeploymentStatus = Type.Object(
  {
    ...phaseFields({
      phase:
        'Starting (no replica ready yet), Ready (every role has all its replicas ready), Degraded (some replicas ready, not all, or an object kvpool does not control holds the name of one of its objects: ReplicasUpToDate=False ChildConflict names it) or Deleting.',
      conditions:
        'DomainRegistered, CacheAttached (judged from what ready engines report, never from flags), ReplicasUpToDate, RoleKindsReady and KVEventsPublishing.',
    }),
    observedGeneration: Type.Optional(
      Type.Integer({ format: 'int64', description: 'The metadata.generation this status was decided from.' }),
    ),
    roles: Type.Optional(MapList(RoleStatus, ['name'], 10, { description: 'One row per role, by name.' })),
    roleSummary: Type.Optional(
      Type.String({
        maxLength: 64,
        description: 'Ready replicas by kind, for example 2S or 1P1D (the ROLES column).',
      }),
    ),
    endpoint: Type.Optional(
      Type.String({
        maxLength: 512,
        description:
          'The URL of the whole deployment inside the cluster: http://<name>.<namespace>.svc:8000, the Service across every role.',
      }),
    ),
    kvCache: Type.Optional(
      Type.Object(
        {
          binding: Type.String({
            maxLength: 253,
            description: 'The KVCachePoolBinding named by spec.kvCache.',
          }),
          pool: Type.Optional(
            Type.String({ maxLength: 253, description: 'The KVCachePool the Binding draws on.' }),
          ),
          domain: Type.Optional(
            Type.Object(
              {
                name: Type.String({
                  maxLength: 63,
                  description: 'The domain name, the engines’ store tenant.',
                }),
                blockSize: Type.Optional(
                  Type.Integer({ format: 'int32', description: 'Tokens per block the engines are given.' }),
                ),
                dtype: Type.Optional(
                  Type.String({ maxLength: 32, description: 'KV-cache dtype the engines are given.' }),
                ),
              },
              { description: "The Binding's reuse domain." },
            ),
          ),
        },
        {
          description:
            'The cache the replicas share, echoed from the Binding; absent until it first resolves.',
        },
      ),
    ),
    poolPrefix: PoolPrefixStatus('the ready replicas'),
  },
  { description: 'What the operator last observed of the roles and the cache.' },
);
export type ModelDeploymentStatus = Static<typeof ModelDeploymentStatus>;

/** The reasons of the CacheAttached condition. */
export const CacheAttachedReason = {
  NotApplicable: 'NotApplicable',
  Unmanaged: 'Unmanaged',
  NoReplicaReady: 'NoReplicaReady',
  /** The engines' own counters show keys (or tokens) stored or loaded; or, with no report, the domain holds data. */
  CacheActive: 'CacheActive',
  /** The engines count failed store keys and no successful one since their last success. */
  CacheOperationsFailing: 'CacheOperationsFailing',
  NoObservationAvailable: 'NoObservationAvailable',
} as const;

/** The reasons of the ReplicasUpToDate condition. */
export const ReplicasUpToDateReason = {
  UpToDate: 'UpToDate',
  RolloutInProgress: 'RolloutInProgress',
  /** No cache connection resolved this pass: the replicas are kept as they run. */
  RolloutHeldByCache: 'RolloutHeldByCache',
  /** The roles cannot be rendered: nothing of this spec is applied. */
  RenderFailed: 'RenderFailed',
  /** An object kvpool does not control holds the name of a child: it is left as it is, and not applied. */
  ChildConflict: 'ChildConflict',
} as const;
