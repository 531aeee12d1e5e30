// Figures people read in messages and printer columns: exact when a unit divides them, otherwise
// rounded to one written decimal, so a rounded figure never passes for an exact one.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type {
  KVCacheBackend,
  KVCachePool,
  KVCachePoolBinding,
  ModelDeployment,
} from '../../src/api/types.ts';
import { formatQuantity } from '../../src/kube/readable-quantity.ts';
import { withDisplayFigures } from '../../src/vocabulary/display-figures.ts';

describe('formatQuantity', () => {
  it('writes exact figures with the largest dividing unit', () => {
    assert.equal(formatQuantity(17179869184n), '16Gi');
    assert.equal(formatQuantity(8589934592), '8Gi');
    assert.equal(formatQuantity(100663296n), '96Mi');
    assert.equal(formatQuantity(1536n), '1.5Ki');
    assert.equal(formatQuantity(0n), '0');
  });

  it('rounds a recut grant to one decimal: 6.4Gi, not 6871947674', () => {
    assert.equal(formatQuantity(6871947674n), '6.4Gi');
    assert.equal(formatQuantity(6871947673), '6.4Gi');
    assert.equal(formatQuantity(3435973837n), '3.2Gi');
  });

  it('keeps the decimal when rounding lands on a whole number', () => {
    assert.equal(formatQuantity(8589934591n), '8.0Gi');
    assert.equal(formatQuantity((1n << 20n) - 1n), '1.0Mi');
  });

  it('writes counts under 1Ki as plain bytes, and stays exact beyond 2^53', () => {
    assert.equal(formatQuantity(1000), '1000');
    assert.equal(formatQuantity(12n), '12');
    assert.equal(formatQuantity((1n << 63n) - 1n), '8.0Ei');
    assert.equal(formatQuantity(7n << 60n), '7Ei');
  });
});

describe('status.display', () => {
  it('rounds a Binding’s exact figures and leaves absent ones absent', () => {
    const status = { phase: 'Ready', effectiveQuota: '6871947674', requestedQuota: '8Gi' };
    assert.deepEqual(withDisplayFigures<KVCachePoolBinding>('KVCachePoolBinding', status), {
      ...status,
      display: { requestedQuota: '8Gi', effectiveQuota: '6.4Gi' },
    });
  });

  it('recomputes the display of a backend and a pool, and drops one whose figures went away', () => {
    assert.deepEqual(
      withDisplayFigures<KVCacheBackend>('KVCacheBackend', { capacity: { total: '16Gi', used: '3145740' } })
        .display,
      { capacity: '16Gi', used: '3.0Mi' },
    );
    assert.deepEqual(withDisplayFigures<KVCachePool>('KVCachePool', { usage: { total: '0' } }).display, {
      usage: '0',
    });
    assert.deepEqual(
      withDisplayFigures<KVCachePool>('KVCachePool', { phase: 'Error', display: { usage: '1Gi' } }),
      {
        phase: 'Error',
      },
    );
    assert.deepEqual(withDisplayFigures<ModelDeployment>('ModelDeployment', { phase: 'Ready' }), {
      phase: 'Ready',
    });
  });
});
