// KVCachePoolBinding: one namespace's grant on a pool, and its reuse domain. KV-cache spec §1.3/§3.3.

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

export const KVCachePoolBindingSpec = Type.Object({
  poolRef: Type.Object(
    { name: Type.String({ minLength: 1, maxLength: 253 }) },
    cel(
      immutable('spec.poolRef', 'a Binding cannot move to another pool; create a new Binding for that pool'),
    ),
  ),
  quota: Type.Object({
    ceiling: Quantity(cel(positiveBytes('spec.quota.ceiling', '8Gi'))),
  }),
  domain: Type.Object(
    {
      name: Type.Optional(
        Type.String({
          default: 'default',
          minLength: 1,
          maxLength: 63,
          ...cel({
            rule: `self.matches('${dns1123Label}')`,
            message:
              'spec.domain.name must be a DNS-1123 label: lowercase letters, digits and -, starting and ending with a letter or digit, for example qwen-fp8-v1',
          }),
        }),
      ),
      blockSize: Type.Integer({
        format: 'int32',
        ...cel({
          rule: 'self > 0',
          message:
            'spec.domain.blockSize is the engine block size in tokens and must be above zero, for example 16',
        }),
      }),
      dtype: Type.String({
        minLength: 1,
        maxLength: 32,
        ...cel({
          rule: "self.matches('^[a-z0-9_]+$')",
          message:
            'spec.domain.dtype must be the engine’s KV-cache dtype spelled in lowercase, for example bfloat16 or fp8_e4m3',
        }),
      }),
    },
    cel(
      immutable(
        'spec.domain',
        'its name, blockSize and dtype are the cache’s compatibility key; delete this Binding and create a new one (the cache is not carried over)',
      ),
    ),
  ),
});
export type KVCachePoolBindingSpec = Static<typeof KVCachePoolBindingSpec>;

export const KVCachePoolBindingStatus = Type.Object({
  ...phaseFields,
  requestedQuota: Type.Optional(Quantity()),
  effectiveQuota: Type.Optional(Quantity()),
  usage: Type.Optional(Quantity()),
  overQuota: Type.Optional(Type.Boolean()),
  blocks: Type.Optional(Type.Integer({ format: 'int64' })),
  hitRate: Type.Optional(Type.String({ pattern: hitRatePattern, maxLength: 6 })),
  usedBy: Type.Optional(UsedBy),
});
export type KVCachePoolBindingStatus = Static<typeof KVCachePoolBindingStatus>;
