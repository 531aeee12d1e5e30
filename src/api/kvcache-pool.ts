// KVCachePool: how much of one backend may be handed out (cluster-scoped; docs/concepts.md, Pool).
import { DisplayFigures } from './display.ts';
import {
  AtomicList,
  cel,
  immutable,
  phaseFields,
  positiveBytes,
  Quantity,
  type Static,
  Type,
  UsedBy,
} from './schema.ts';

export const KVCachePoolSpec = Type.Object(
  {
    backends: Type.Array(Type.String({ minLength: 1, maxLength: 253 }), {
      maxItems: 8,
      'x-kubernetes-list-type': 'atomic',
      description:
        'The KVCacheBackend the pool draws on: exactly one name, since a pool cannot span stores. Immutable: create a new pool for another backend. Admission refuses, on create, a backend that does not exist, and warns when it runs without multi-tenancy.',
      ...cel(
        {
          rule: 'size(self) == 1',
          message:
            'spec.backends must name exactly one KVCacheBackend; a pool cannot span stores, so create one pool per backend',
        },
        immutable('spec.backends', 'a pool cannot be re-pointed; create a new pool for the other backend'),
      ),
    }),
    quota: Type.Object(
      {
        total: Quantity({
          description:
            "Bytes the pool's Bindings may ask for together (a quantity such as 16Gi), a whole number above zero. Admission refuses a Binding ceiling above it; ceilings that only sum past it are admitted and reported by QuotaWithinTotal=False.",
          ...cel(positiveBytes('spec.quota.total', '16Gi')),
        }),
      },
      { description: "The pool's size." },
    ),
  },
  { description: 'Which backend the pool draws on, and how much of it its Bindings may ask for.' },
);
export type KVCachePoolSpec = Static<typeof KVCachePoolSpec>;

const hitRatePattern = '^(0(\\.[0-9]{1,4})?|1(\\.0{1,4})?)$';
const notReported = 'Not reported yet by this operator.';

const PoolDomain = Type.Object({
  name: Type.String({ maxLength: 63, description: "The domain's name, which is the store's tenant id." }),
  binding: Type.Object(
    {
      namespace: Type.String({ maxLength: 63, description: "The Binding's namespace." }),
      name: Type.String({ maxLength: 253, description: "The Binding's name." }),
    },
    { description: 'The KVCachePoolBinding that registers the domain.' },
  ),
  blockSize: Type.Optional(
    Type.Integer({ format: 'int32', description: "Tokens per block, from the Binding's domain." }),
  ),
  dtype: Type.Optional(
    Type.String({ maxLength: 32, description: "KV-cache dtype, from the Binding's domain." }),
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
});

export const KVCachePoolStatus = Type.Object(
  {
    ...phaseFields({
      phase:
        'Provisioning (a condition has not been observed yet), Ready (the master holds every quota the pool asked for), Error (the backend does not resolve, the ledger is unreachable or not writable, or the store’s allocatable capacity is unread or zero) or Deleting. A backend without multi-tenancy still gives Ready.',
      conditions:
        'BackendResolved, QuotaLedgerAvailable, QuotaPolicyWritable and CapacityAllocatable decide the phase; QuotaWithinTotal only informs; Releasable appears while deleting.',
    }),
    clientEndpoint: Type.Optional(
      Type.String({
        maxLength: 259,
        description:
          "The store's Client address (host:port) that engines attached through this pool dial, copied from the backend's status.endpoints.",
      }),
    ),
    usage: Type.Optional(
      Type.Object(
        {
          total: Type.Optional(
            Quantity({
              description:
                "Bytes the pool's domains hold on the store together: 0 with no domains, absent (never 0) when the store was not read or reports none of them.",
            }),
          ),
        },
        { description: 'What the pool holds on the store.' },
      ),
    ),
    display: DisplayFigures({ usage: 'status.usage.total' }),
    domains: Type.Optional(
      AtomicList(PoolDomain, 1024, {
        description:
          "The reuse domains of the pool's Bindings, by name; a name two Bindings claim is listed once. At most 1024 are listed; domainCount counts them all.",
      }),
    ),
    domainCount: Type.Optional(
      Type.Integer({
        format: 'int32',
        description: "How many reuse domains the pool's Bindings register, listed or not.",
      }),
    ),
    usedBy: Type.Optional(
      UsedBy(
        'The KVCachePoolBindings that name this pool (at most 1024 listed; bindingCount counts them all); while any remains, deletion waits (Releasable=False, HeldByBindings).',
      ),
    ),
    bindingCount: Type.Optional(
      Type.Integer({
        format: 'int32',
        description: 'How many KVCachePoolBindings name this pool, listed or not.',
      }),
    ),
  },
  { description: 'What the operator last observed of the pool on its store.' },
);
export type KVCachePoolStatus = Static<typeof KVCachePoolStatus>;
export { hitRatePattern };
