// Admission of KVCachePool and KVCachePoolBinding beyond the CRD schema (KV-cache spec §3.2, §3.3):
// each refusal names the field and the fix; the warnings tell an administrator what is not enforced.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { KVCachePoolBinding } from '../../src/api/types.ts';
import {
  type BindingContext,
  claimRefusal,
  validateBinding,
  validatePoolCreate,
} from '../../src/webhooks/pool-binding-rules.ts';
import { backend, binding, externalBackend, pool } from '../builders/index.ts';

describe('validatePoolCreate', () => {
  it('admits a pool on an existing multi-tenant backend without warnings', () => {
    assert.deepEqual(validatePoolCreate(pool(), backend()), { errors: [], warnings: [] });
  });

  it('refuses a pool whose backend does not exist, naming the field and the fix', () => {
    const { errors } = validatePoolCreate(pool('p', { backend: 'missing' }), undefined);
    assert.equal(errors.length, 1);
    assert.match(
      errors[0]!,
      /^spec\.backends\[0\]: KVCacheBackend "missing" does not exist; create the backend first/,
    );
  });

  it('admits a pool on a backend without multi-tenancy, warning that no quota is in force', () => {
    const f = validatePoolCreate(pool(), backend('mooncake-dram', { multiTenancy: false }));
    assert.deepEqual(f.errors, []);
    assert.equal(f.warnings.length, 1);
    assert.match(
      f.warnings[0]!,
      /backend "mooncake-dram" runs without multi-tenancy: it holds no tenant ledger, so no per-tenant quota is in force.*exactly one reuse domain/,
    );
  });

  it('does not inspect an external backend', () => {
    assert.deepEqual(validatePoolCreate(pool('p', { backend: 'mooncake-ext' }), externalBackend()), {
      errors: [],
      warnings: [],
    });
  });
});

function ctx(over: Partial<BindingContext> = {}): BindingContext {
  return { pool: pool(), backend: backend(), otherDomains: [], dtypeOwned: true, ...over };
}

const mine = (over: Parameters<typeof binding>[2] = {}) =>
  binding('team-a', 'qwen', { domain: 'qwen-fp8-v1', ceiling: '600Gi', dtype: 'fp8_e4m3', ...over });

function check(b: KVCachePoolBinding, old?: KVCachePoolBinding, c: BindingContext = ctx()) {
  return validateBinding(b, old, c);
}

describe('validateBinding: dtype and ceiling', () => {
  it('admits a Binding with a unique domain on an existing pool', () => {
    assert.deepEqual(check(mine()), { errors: [], warnings: [] });
  });

  it('refuses dtype auto on create, naming the flag it renders and an example', () => {
    const { errors } = check(mine({ dtype: 'auto' }));
    assert.equal(errors.length, 1);
    assert.match(
      errors[0]!,
      /^spec\.domain\.dtype: auto is refused because .* --kv-cache-dtype .*for example bfloat16/,
    );
  });

  it('admits dtype auto when the dtype Setting is off, and keeps a stored auto updatable', () => {
    assert.deepEqual(check(mine({ dtype: 'auto' }), undefined, ctx({ dtypeOwned: false })).errors, []);
    const stored = mine({ dtype: 'auto' });
    assert.deepEqual(check(mine({ dtype: 'auto', ceiling: '500Gi' }), stored).errors, []);
  });

  it('refuses a ceiling above the pool’s total, naming both and the fix', () => {
    const { errors } = check(mine({ ceiling: '1Ti' }));
    assert.deepEqual(errors, [
      "spec.quota.ceiling: 1Ti is more than pool shared-dram's quota.total of 900Gi; lower the ceiling or raise the pool's total",
    ]);
  });

  it('re-checks the ceiling against the pool only when it moves', () => {
    const stored = mine({ ceiling: '1Ti' });
    assert.deepEqual(check(mine({ ceiling: '1Ti', deleting: true }), stored).errors, []);
    assert.equal(check(mine({ ceiling: '2Ti' }), stored).errors.length, 1);
    assert.deepEqual(check(mine({ ceiling: '800Gi' }), stored).errors, []);
  });

  it('admits a Binding to a pool that does not exist yet, warning that it grants nothing', () => {
    const f = check(mine({ pool: 'later' }), undefined, ctx({ pool: undefined, backend: undefined }));
    assert.deepEqual(f.errors, []);
    assert.deepEqual(f.warnings, [
      'KVCachePool "later" does not exist yet: the Binding grants nothing until it does',
    ]);
  });
});

describe('validateBinding: domains on one master', () => {
  it('refuses a domain a Binding of the same namespace holds on the same backend, naming holder and backend', () => {
    const held = { kind: 'held', holder: { namespace: 'team-a', name: 'first' } } as const;
    assert.match(
      claimRefusal(mine(), 'mooncake-dram', held, 60_000)!,
      /^spec\.domain\.name: domain "qwen-fp8-v1" is already claimed on backend mooncake-dram by KVCachePoolBinding team-a\/first .*choose another spec\.domain\.name$/,
    );
  });

  it('refuses a domain a Binding of another namespace holds without naming that Binding or its namespace', () => {
    const held = { kind: 'held', holder: { namespace: 'team-b', name: 'first' } } as const;
    const refusal = claimRefusal(mine(), 'mooncake-dram', held, 60_000)!;
    assert.match(
      refusal,
      /^spec\.domain\.name: domain "qwen-fp8-v1" is already claimed on this store \(backend mooncake-dram\) by another namespace .*choose another spec\.domain\.name$/,
    );
    assert.doesNotMatch(refusal, /team-b|first/);
  });

  it('names an omitted domain "default" when refusing it', () => {
    const held = { kind: 'held', holder: { namespace: 'team-b', name: 'first' } } as const;
    assert.match(
      claimRefusal(mine({ domain: null }), 'b', held, 60_000)!,
      /domain "default" is already claimed .*an omitted name is "default"/,
    );
  });

  it('refuses a domain whose claim awaits another create, saying when it lapses', () => {
    const refusal = claimRefusal(mine(), 'b', { kind: 'pending', lapsesInMs: 12_400 }, 60_000)!;
    assert.match(refusal, /^spec\.domain\.name: domain "qwen-fp8-v1" is already claimed on this store/);
    assert.match(refusal, /lapses 60 s after it was made \(in at most 13 s\): retry then/);
  });

  it('refuses a domain whose claim name a foreign Lease holds, and admits an own or free claim', () => {
    assert.match(claimRefusal(mine(), 'b', { kind: 'foreign' }, 1)!, /remove that Lease/);
    assert.equal(claimRefusal(mine(), 'b', { kind: 'ours' }, 1), undefined);
  });

  it('refuses a second distinct domain on a backend declared without multi-tenancy', () => {
    const c = ctx({
      backend: backend('mooncake-dram', { multiTenancy: false }),
      otherDomains: ['llama'],
    });
    const { errors } = check(mine(), undefined, c);
    assert.equal(errors.length, 1);
    assert.match(
      errors[0]!,
      /^spec\.domain\.name: backend mooncake-dram holds no tenant ledger, so it serves exactly one reuse domain \(llama\); use that domain, or a backend with leader\.multiTenancy: true$/,
    );
  });

  it('refuses a second distinct domain when the pool observed no ledger on the master', () => {
    const c = ctx({
      backend: externalBackend('mooncake-dram'),
      otherDomains: ['llama'],
      ledgerReason: 'MultiTenancyDisabled',
    });
    assert.equal(check(mine(), undefined, c).errors.length, 1);
  });

  it('admits a second distinct domain on a multi-tenant master with a tenant-compatibility warning', () => {
    for (const ledgerReason of [undefined, 'Available', 'LedgerUnreachable'] as const) {
      const c = ctx({ otherDomains: ['llama'], ledgerReason });
      const f = check(mine(), undefined, c);
      assert.deepEqual(f.errors, []);
      assert.equal(f.warnings.length, 1);
      assert.match(
        f.warnings[0]!,
        /domain "qwen-fp8-v1" is a second reuse domain on backend mooncake-dram: engines must pass the injected tenant/,
      );
    }
  });

  it('does not judge domains again on update (they are immutable)', () => {
    assert.deepEqual(check(mine({ ceiling: '500Gi' }), mine(), ctx({ otherDomains: ['llama'] })), {
      errors: [],
      warnings: [],
    });
  });
});
