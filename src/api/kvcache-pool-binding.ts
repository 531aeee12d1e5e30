// KVCachePoolBinding: one namespace's grant on a pool, and its reuse domain (docs/concepts.md).

import { DisplayFigures } from './display.ts';
import { hitRatePattern } from './kvcache-pool.ts';
import { PoolPrefixStatus } from './pool-prefix.ts';
import {
  cel,
  dns1123Label,
  dns1123Subdomain,
  immutable,
  phaseFields,
  positiveBytes,
  Quantity,
  type Static,
  Type,
  UsedBy,
} from './schema.ts';

export const KVCachePoolBindingSpec = Type.Object(
  {
    poolRef: Type.Object(
      {
        name: Type.String({
          minLength: 1,
          maxLength: 253,
          description:
            'Name of the KVCachePool, a DNS-1123 subdomain. A pool that does not exist yet is admitted with a warning; the Binding grants nothing until it exists.',
          ...cel({
            rule: `self.matches(r'${dns1123Subdomain}')`,
            message:
              'spec.poolRef.name must be the name of a KVCachePool, a DNS-1123 subdomain: lowercase letters, digits, - and ., starting and ending with a letter or digit, for example shared-dram (see kubectl get kvcachepool)',
          }),
        }),
      },
      {
        description:
          'The KVCachePool this Binding draws on. Immutable: create a new Binding for another pool.',
        ...cel(
          immutable(
            'spec.poolRef',
            'a Binding cannot move to another pool; create a new Binding for that pool',
          ),
        ),
      },
    ),
    quota: Type.Object(
      {
        ceiling: Quantity({
          description:
            "Most bytes the domain may hold on the store (a quantity such as 8Gi), a whole number above zero; there is no default. Editable; admission refuses a new value above the pool's quota.total. When the ceilings on one store exceed what it can allocate, it grants each a proportional share (status.effectiveQuota).",
          ...cel(positiveBytes('spec.quota.ceiling', '8Gi')),
        }),
      },
      { description: "How much of the store this namespace's domain may use." },
    ),
    domain: Type.Object(
      {
        name: Type.Optional(
          Type.String({
            default: 'default',
            minLength: 1,
            maxLength: 63,
            description:
              "The domain's name, which is the store tenant the engines are given: a DNS-1123 label. Defaults to default. Admission refuses a name another Binding already holds on the same backend, and a second name on a backend without multi-tenancy.",
            ...cel({
              rule: `self.matches('${dns1123Label}')`,
              message:
                'spec.domain.name must be a DNS-1123 label: lowercase letters, digits and -, starting and ending with a letter or digit, for example qwen-fp8-v1',
            }),
          }),
        ),
        blockSize: Type.Integer({
          format: 'int32',
          description:
            'Tokens per KV block, above zero (for example 16). Rendered as --block-size (vLLM) or --page-size (SGLang) on every engine attached through this Binding, so all cut the same keys.',
          ...cel({
            rule: 'self > 0',
            message:
              'spec.domain.blockSize is the engine block size in tokens and must be above zero, for example 16',
          }),
        }),
        dtype: Type.String({
          minLength: 1,
          maxLength: 32,
          description:
            'The engines’ KV-cache dtype in lowercase, for example bfloat16 or fp8_e4m3. While the Setting model-deployment-kv-cache-dtype-owned is true (the default) it is rendered as --kv-cache-dtype, and auto is refused on create; float32, which engines keep only for a float32 model, is rendered as --dtype float32 --kv-cache-dtype auto.',
          ...cel({
            rule: "self.matches('^[a-z0-9_]+$')",
            message:
              'spec.domain.dtype must be the engine’s KV-cache dtype spelled in lowercase, for example bfloat16 or fp8_e4m3',
          }),
        }),
      },
      {
        description:
          'The reuse domain: the store tenant whose cache the engines share, and the engine settings that make its blocks compatible. Immutable: to change it, delete the Binding and create a new one (the cache is not carried over).',
        ...cel(
          immutable(
            'spec.domain',
            'its name, blockSize and dtype are the cache’s compatibility key; delete this Binding and create a new one (the cache is not carried over)',
          ),
        ),
      },
    ),
  },
  { description: 'Which pool this namespace draws on, up to what, and under which reuse domain.' },
);
export type KVCachePoolBindingSpec = Static<typeof KVCachePoolBindingSpec>;

const figure = (description: string) =>
  Type.Optional(
    Quantity({ description: `${description} Absent, never 0, when the store did not report it.` }),
  );
const notReported = 'Not reported yet by this operator.';

export const KVCachePoolBindingStatus = Type.Object(
  {
    ...phaseFields({
      phase:
        'Provisioning (a condition has not been observed yet), Ready (the domain is the Binding’s alone and the store grants it quota), Error (the pool is missing, the domain is contested, the store was not read or grants nothing) or Deleting.',
      conditions:
        'DomainExclusive, QuotaObserved and QuotaGranted decide the phase; Releasable appears while deleting.',
    }),
    requestedQuota: figure('The ceiling the store holds for the domain, as it reports it.'),
    effectiveQuota: figure(
      'What the store grants the domain now: the ceiling, or a proportional share when the ceilings on the store exceed what it can allocate; a store without multi-tenancy grants none.',
    ),
    usage: figure('Bytes the domain holds on the store.'),
    display: DisplayFigures({
      requestedQuota: 'status.requestedQuota',
      effectiveQuota: 'status.effectiveQuota',
      usage: 'status.usage',
    }),
    overQuota: Type.Optional(
      Type.Boolean({
        description:
          'True when the store reports the domain holding more than its grant, as after a proportional cut; absent when the store did not report it.',
      }),
    ),
    blocks: Type.Optional(
      Type.Integer({ format: 'int64', description: `Blocks the domain holds. ${notReported}` }),
    ),
    hitRate: Type.Optional(
      Type.String({
        pattern: hitRatePattern,
        maxLength: 6,
        description: `Share of lookups that hit, 0 to 1 with up to four decimals. ${notReported}`,
      }),
    ),
    poolPrefix: PoolPrefixStatus(
      'the engines of the ModelDeployments in this namespace that name this Binding',
      ' The sum of their status.poolPrefix; 0 tokens while no ModelDeployment names the Binding (Pods injected without a ModelDeployment are not counted).',
    ),
    usedBy: Type.Optional(
      UsedBy(
        'The ModelDeployments in this namespace that name this Binding; while any remains, deletion waits (Releasable=False, HeldByWorkloads).',
      ),
    ),
  },
  { description: 'What the operator last observed of the domain on its store.' },
);
export type KVCachePoolBindingStatus = Static<typeof KVCachePoolBindingStatus>;

/**
 * On a Binding being deleted, "true" lets the operator remove its domain's objects from the store so
 * the tenant can be released (decision 32). Without it a domain that holds data keeps the Binding.
 */
export const purgeOnDeleteAnnotation = 'kvcache.gpustack.ai/purge-on-delete';

/** The reasons of a Binding's Releasable condition (present while it is being deleted). */
export const BindingReleasableReason = {
  Released: 'Released',
  HeldByWorkloads: 'HeldByWorkloads',
  /** The master refuses to drop the domain while it holds data, and no purge was asked for. */
  LedgerNotReleased: 'LedgerNotReleased',
  /** A purge was asked for and is under way: objects in use within their lease wait for it to end. */
  Purging: 'Purging',
  /** A purge was asked for on a store with a disk tier, where the master's removal is not per domain. */
  PurgeUnsafeWithDiskTier: 'PurgeUnsafeWithDiskTier',
  LedgerRequestFailed: 'LedgerRequestFailed',
} as const;
