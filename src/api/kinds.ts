// Every kind this project serves: names, scope, columns and the schemas that define them.
import type { TSchema } from '@sinclair/typebox';
import { InstanceTypeSpec, InstanceTypeStatus } from './instance-type.ts';
import { KVCacheBackendSpec, KVCacheBackendStatus } from './kvcache-backend.ts';
import { KVCachePoolSpec, KVCachePoolStatus } from './kvcache-pool.ts';
import { KVCachePoolBindingSpec, KVCachePoolBindingStatus } from './kvcache-pool-binding.ts';
import { ModelDeploymentSpec, ModelDeploymentStatus } from './model-deployment.ts';
import { SettingSpec } from './setting.ts';

export const workerGroup = 'worker.gpustack.ai';
export const settingsGroup = 'gpustack.ai';

export interface PrinterColumn {
  name: string;
  type: 'string' | 'integer' | 'number' | 'boolean' | 'date';
  jsonPath: string;
  priority?: number;
  description?: string;
}

export interface KindDefinition {
  group: string;
  version: 'v1';
  kind: string;
  plural: string;
  singular: string;
  shortNames: string[];
  scope: 'Namespaced' | 'Cluster';
  /** What one object of the kind is: the root description `kubectl explain <kind>` prints. */
  description: string;
  /**
   * Names `kubectl get <category>` lists the kind under
   * (docs/decisions/0014-resource-categories-and-field-descriptions.md).
   */
  categories: readonly string[];
  spec: TSchema;
  status?: TSchema;
  specRequired: boolean;
  columns: PrinterColumn[];
}

// Every kind is under the reference system's `gpustack`; the project's own kinds are also under `kvpool`,
// and the three cache kinds under `kvcache`.
const cacheKinds = ['gpustack', 'kvpool', 'kvcache'];
const workerKinds = ['gpustack', 'kvpool'];

const phase: PrinterColumn = { name: 'Phase', type: 'string', jsonPath: '.status.phase' };
const age: PrinterColumn = { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' };

export const kinds = {
  KVCacheBackend: {
    group: workerGroup,
    version: 'v1',
    kind: 'KVCacheBackend',
    plural: 'kvcachebackends',
    singular: 'kvcachebackend',
    shortNames: ['kvcb'],
    scope: 'Cluster',
    description:
      'KVCacheBackend is a KV-cache store: one the operator runs (a leader and per-node member groups holding memory segments, optionally with a disk tier) or an existing one it only observes. KVCachePools hand out its capacity.',
    categories: cacheKinds,
    spec: KVCacheBackendSpec,
    status: KVCacheBackendStatus,
    specRequired: true,
    columns: [
      { name: 'Type', type: 'string', jsonPath: '.spec.type' },
      phase,
      { name: 'Endpoint', type: 'string', jsonPath: '.status.endpoints[?(@.name=="Client")].address' },
      {
        name: 'Capacity',
        type: 'string',
        jsonPath: '.status.display.capacity',
        description: 'What the store can hold, as people write it; exact in status.capacity.total.',
      },
      age,
    ],
  },
  KVCachePool: {
    group: workerGroup,
    version: 'v1',
    kind: 'KVCachePool',
    plural: 'kvcachepools',
    singular: 'kvcachepool',
    shortNames: ['kvcp'],
    scope: 'Cluster',
    description:
      'KVCachePool is a share of one KVCacheBackend that KVCachePoolBindings hand out to namespaces.',
    categories: cacheKinds,
    spec: KVCachePoolSpec,
    status: KVCachePoolStatus,
    specRequired: true,
    columns: [
      { name: 'Quota', type: 'string', jsonPath: '.spec.quota.total' },
      {
        name: 'Usage',
        type: 'string',
        jsonPath: '.status.display.usage',
        description: "What the pool's domains hold, as people write it; exact in status.usage.total.",
      },
      phase,
      { name: 'Endpoint', type: 'string', jsonPath: '.status.clientEndpoint' },
      age,
    ],
  },
  KVCachePoolBinding: {
    group: workerGroup,
    version: 'v1',
    kind: 'KVCachePoolBinding',
    plural: 'kvcachepoolbindings',
    singular: 'kvcachepoolbinding',
    shortNames: ['kvcpb'],
    scope: 'Namespaced',
    description:
      "KVCachePoolBinding grants its namespace a quota on a KVCachePool under one reuse domain: engines attached through it share that domain's cache.",
    categories: cacheKinds,
    spec: KVCachePoolBindingSpec,
    status: KVCachePoolBindingStatus,
    specRequired: true,
    columns: [
      { name: 'Pool', type: 'string', jsonPath: '.spec.poolRef.name' },
      { name: 'Domain', type: 'string', jsonPath: '.spec.domain.name' },
      {
        name: 'Effective',
        type: 'string',
        jsonPath: '.status.display.effectiveQuota',
        description: 'What the store grants the domain, as people write it; exact in status.effectiveQuota.',
      },
      {
        name: 'Usage',
        type: 'string',
        jsonPath: '.status.display.usage',
        description: 'What the domain holds, as people write it; exact in status.usage.',
      },
      phase,
      age,
    ],
  },
  ModelDeployment: {
    group: workerGroup,
    version: 'v1',
    kind: 'ModelDeployment',
    plural: 'modeldeployments',
    singular: 'modeldeployment',
    shortNames: ['md'],
    scope: 'Namespaced',
    description:
      'ModelDeployment serves a model with vLLM or SGLang in roles of replicas; with spec.kvCache every replica shares the reuse domain of a KVCachePoolBinding.',
    categories: workerKinds,
    spec: ModelDeploymentSpec,
    status: ModelDeploymentStatus,
    specRequired: true,
    columns: [
      { name: 'Engine', type: 'string', jsonPath: '.spec.engine.name' },
      { name: 'Roles', type: 'string', jsonPath: '.status.roleSummary' },
      phase,
      { name: 'Endpoint', type: 'string', jsonPath: '.status.endpoint', priority: 1 },
      age,
    ],
  },
  InstanceType: {
    group: workerGroup,
    version: 'v1',
    kind: 'InstanceType',
    plural: 'instancetypes',
    singular: 'instancetype',
    shortNames: [],
    scope: 'Cluster',
    description:
      'InstanceType is a class of node a ModelDeployment role runs on: its accelerator, OS, architecture, and the CPU and memory that come with each card.',
    categories: workerKinds,
    spec: InstanceTypeSpec,
    status: InstanceTypeStatus,
    specRequired: true,
    columns: [
      { name: 'Entrance', type: 'string', jsonPath: '.status.entrance' },
      { name: 'Unit(CPU/RAM)/Storage', type: 'string', jsonPath: '.status.unit' },
      { name: 'Accelerator(EX/SH/SL/PT)', type: 'string', jsonPath: '.status.acceleratorSummary' },
      { name: 'CPU', type: 'string', jsonPath: '.status.cpuSummary' },
      phase,
    ],
  },
  Setting: {
    group: settingsGroup,
    version: 'v1',
    kind: 'Setting',
    plural: 'settings',
    singular: 'setting',
    shortNames: ['set'],
    scope: 'Namespaced',
    description:
      "Setting is one operator setting, in the operator namespace: the object's name is the setting and spec.value its value; a setting with no object takes its default.",
    categories: ['gpustack'],
    spec: SettingSpec,
    specRequired: true,
    columns: [{ name: 'Value', type: 'string', jsonPath: '.spec.value' }, age],
  },
} as const satisfies Record<string, KindDefinition>;

export type KindName = keyof typeof kinds;
