// KVCachePoolBinding: one namespace's grant on a pool, and its reuse domain. KV-cache spec §1.3/§3.3.

import { DisplayFigures } from './display.ts';
import { hitRatePattern } from './kvcache-pool.ts';
import {
  cel,
  dns1123Label,
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
            'Name of the KVCachePool. A pool that does not exist yet is admitted with a warning; the Binding grants nothing until it exists.',
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
            'The engines’ KV-cache dtype in lowercase, for example bfloat16 or fp8_e4m3. While the Setting model-deployment-kv-cache-dtype-owned is true (the default) it is rendered as --kv-cache-dtype, and auto is refused on create.',
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
    usedBy: Type.Optional(
      UsedBy(
        'The ModelDeployments in this namespace that name this Binding; while any remains, deletion waits (Releasable=False, HeldByWorkloads).',
      ),
    ),
  },
  { description: 'What the operator last observed of the domain on its store.' },
);
export type KVCachePoolBindingStatus = Static<typeof KVCachePoolBindingStatus>;
