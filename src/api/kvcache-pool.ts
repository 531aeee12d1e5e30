// KVCachePool: how much of one backend may be handed out (cluster-scoped). KV-cache spec §1.2/§3.2.
import {
  cel,
  immutable,
  MapList,
  phaseFields,
  positiveBytes,
  Quantity,
  type Static,
  Type,
  UsedBy,
} from './schema.ts';

export const KVCachePoolSpec = Type.Object({
  backends: Type.Array(Type.String({ minLength: 1, maxLength: 253 }), {
    maxItems: 8,
    'x-kubernetes-list-type': 'atomic',
    ...cel(
      {
        rule: 'size(self) == 1',
        message:
          'spec.backends must name exactly one KVCacheBackend; a pool cannot span stores, so create one pool per backend',
      },
      immutable('spec.backends', 'a pool cannot be re-pointed; create a new pool for the other backend'),
    ),
  }),
  quota: Type.Object({
    total: Quantity(cel(positiveBytes('spec.quota.total', '16Gi'))),
  }),
});
export type KVCachePoolSpec = Static<typeof KVCachePoolSpec>;

const hitRatePattern = '^(0(\\.[0-9]{1,4})?|1(\\.0{1,4})?)$';

const PoolDomain = Type.Object({
  name: Type.String({ maxLength: 63 }),
  binding: Type.Object({ namespace: Type.String({ maxLength: 63 }), name: Type.String({ maxLength: 253 }) }),
  blockSize: Type.Optional(Type.Integer({ format: 'int32' })),
  dtype: Type.Optional(Type.String({ maxLength: 32 })),
  blocks: Type.Optional(Type.Integer({ format: 'int64' })),
  hitRate: Type.Optional(Type.String({ pattern: hitRatePattern, maxLength: 6 })),
});

export const KVCachePoolStatus = Type.Object({
  ...phaseFields,
  clientEndpoint: Type.Optional(Type.String({ maxLength: 259 })),
  usage: Type.Optional(Type.Object({ total: Type.Optional(Quantity()) })),
  domains: Type.Optional(MapList(PoolDomain, ['name'], 1024)),
  domainCount: Type.Optional(Type.Integer({ format: 'int32' })),
  usedBy: Type.Optional(UsedBy),
  bindingCount: Type.Optional(Type.Integer({ format: 'int32' })),
});
export type KVCachePoolStatus = Static<typeof KVCachePoolStatus>;
export { hitRatePattern };
