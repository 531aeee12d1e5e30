// KVCachePool and KVCachePoolBinding: every shape and immutability rule refuses a bad create or edit
// through the real apiserver, naming the field and the fix.
import { binding, describeRefusals, named, pool, refusalCases } from '../support/schema-refusals.ts';

const { cases, create, update } = refusalCases();

// KVCachePool.
create(
  'pool naming two backends',
  named((n) => pool(n, { backends: ['a', 'b'] }), 'two'),
  'spec.backends',
  'exactly one KVCacheBackend',
  'one pool per backend',
);
create(
  'pool naming no backend',
  named((n) => pool(n, { backends: [] }), 'none'),
  'spec.backends',
  'exactly one KVCacheBackend',
);
update(
  'pool re-pointed',
  named((n) => pool(n), 'repoint'),
  (s) => {
    s.backends = ['other'];
  },
  'spec.backends',
  'spec.backends is immutable',
  'create a new pool',
);
create(
  'pool with zero total',
  named((n) => pool(n, { quota: { total: 0 } }), 'ptotal'),
  'spec.quota.total',
  'greater than zero',
  'for example 16Gi',
);

// KVCachePoolBinding.
create(
  'binding poolRef that is no object name',
  named((n) => binding(n, { poolRef: { name: 'Shared_DRAM' } }), 'prefname'),
  'spec.poolRef.name',
  'spec.poolRef.name must be the name of a KVCachePool',
  'DNS-1123 subdomain',
  'for example shared-dram',
);
update(
  'binding poolRef changed',
  named((n) => binding(n), 'pref'),
  (s) => {
    s.poolRef = { name: 'q' };
  },
  'spec.poolRef',
  'spec.poolRef is immutable',
  'create a new Binding',
);
update(
  'binding domain dtype changed',
  named((n) => binding(n), 'dtype'),
  (s) => {
    (s.domain as Record<string, unknown>).dtype = 'fp8_e4m3';
  },
  'spec.domain',
  'spec.domain is immutable',
  'delete this Binding and create a new one',
);
update(
  'binding domain name changed',
  named((n) => binding(n), 'dname'),
  (s) => {
    (s.domain as Record<string, unknown>).name = 'other';
  },
  'spec.domain',
  'spec.domain is immutable',
);
create(
  'binding domain name not a DNS label',
  named((n) => binding(n, { domain: { name: 'Qwen_7B', blockSize: 16, dtype: 'bfloat16' } }), 'dns'),
  'spec.domain.name',
  'DNS-1123 label',
  'for example qwen-fp8-v1',
);
create(
  'binding domain name starting with _',
  named((n) => binding(n, { domain: { name: '_tenant', blockSize: 16, dtype: 'bfloat16' } }), 'under'),
  'spec.domain.name',
  'DNS-1123 label',
);
create(
  'binding blockSize zero',
  named((n) => binding(n, { domain: { blockSize: 0, dtype: 'bfloat16' } }), 'block'),
  'spec.domain.blockSize',
  'above zero',
);
create(
  'binding dtype not lowercase',
  named((n) => binding(n, { domain: { blockSize: 16, dtype: 'BF16' } }), 'upper'),
  'spec.domain.dtype',
  'lowercase',
  'bfloat16',
);
create(
  'binding zero ceiling',
  named((n) => binding(n, { quota: { ceiling: '0' } }), 'ceil'),
  'spec.quota.ceiling',
  'greater than zero',
);

describeRefusals('KVCachePool, KVCachePoolBinding', cases);
