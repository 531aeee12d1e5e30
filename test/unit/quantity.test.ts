// Quantities as the apiserver reads them: sizes a user writes must land as the exact byte counts.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { formatQuantity } from '../../src/kube/readable-quantity.ts';
import { formatBinarySI, parseQuantityBytes } from '../../src/vocabulary/quantity.ts';

describe('parseQuantityBytes', () => {
  it('reads binary, decimal, exponent and plain forms', () => {
    assert.equal(parseQuantityBytes('8Gi'), 8589934592n);
    assert.equal(parseQuantityBytes('64Mi'), 67108864n);
    assert.equal(parseQuantityBytes('134217728'), 134217728n);
    assert.equal(parseQuantityBytes(1e9), 1000000000n);
    assert.equal(parseQuantityBytes('1G'), 1000000000n);
    assert.equal(parseQuantityBytes('1e9'), 1000000000n);
    assert.equal(parseQuantityBytes('1.5Gi'), 1610612736n);
    assert.equal(parseQuantityBytes('0'), 0n);
  });

  it('stays exact beyond 2^53', () => {
    assert.equal(parseQuantityBytes('9223372036854775807'), 9223372036854775807n);
    assert.equal(parseQuantityBytes('7Ei'), 7n << 60n);
  });

  it('rounds fractions of a byte up, as the apiserver does', () => {
    assert.equal(parseQuantityBytes('1500m'), 2n);
    assert.equal(parseQuantityBytes('0.1'), 1n);
  });

  it('refuses text that is not a quantity, naming an example', () => {
    assert.throws(() => parseQuantityBytes('8 GiB'), /not a Kubernetes quantity.*8Gi/);
    assert.throws(() => parseQuantityBytes(''), /not a Kubernetes quantity/);
  });
});

describe('formatBinarySI', () => {
  it('uses the largest power-of-1024 suffix that divides the count', () => {
    assert.equal(formatBinarySI(17179869184n), '16Gi');
    assert.equal(formatBinarySI(100663296n), '96Mi');
    assert.equal(formatBinarySI(1572864n), '1536Ki');
    assert.equal(formatBinarySI(0n), '0');
  });

  it('writes plain bytes when no suffix divides', () => {
    assert.equal(formatBinarySI(1000000000n), '1000000000');
    assert.equal(formatBinarySI(1023n), '1023');
  });
});

describe('the binary suffixes', () => {
  it('read and write alike, from Ki to Ei, for parsing, BinarySI and readable figures', () => {
    const suffixes = ['Ki', 'Mi', 'Gi', 'Ti', 'Pi', 'Ei'];
    for (const [i, suffix] of suffixes.entries()) {
      const bytes = 3n * 1024n ** BigInt(i + 1);
      assert.equal(parseQuantityBytes(`3${suffix}`), bytes, suffix);
      assert.equal(formatBinarySI(bytes), `3${suffix}`, suffix);
      assert.equal(formatQuantity(bytes), `3${suffix}`, suffix);
    }
  });
});
