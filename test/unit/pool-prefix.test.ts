// Prompt tokens served from the pool as statuses carry them: a ratio only where queries were counted,
// and a Binding's sum over its ModelDeployments that never mixes SGLang's hits into vLLM's ratio.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { hitRatio, poolPrefixOf, sumPoolPrefix } from '../../src/vocabulary/pool-prefix.ts';

describe('pool prefix figures', () => {
  it('writes the ratio with up to four decimals, absent without queries', () => {
    assert.equal(hitRatio(768, 1536), '0.5');
    assert.equal(hitRatio(1, 3), '0.3333');
    assert.equal(hitRatio(5, 5), '1');
    assert.equal(hitRatio(5, 0), undefined);
    assert.equal(hitRatio(5, undefined), undefined);
    assert.equal(hitRatio(undefined, 10), undefined);
  });

  it('is absent when neither count was reported', () => {
    assert.equal(poolPrefixOf(undefined, undefined), undefined);
    assert.deepEqual(poolPrefixOf(0, 0), { hitTokens: 0, queriedTokens: 0 });
  });

  it('sums statuses, the ratio over those that counted their queries only', () => {
    const vllm = { hitTokens: 100, queriedTokens: 400, hitRatio: '0.25' };
    const sglang = { hitTokens: 900 };
    assert.deepEqual(sumPoolPrefix([vllm, sglang, undefined]), {
      hitTokens: 1000,
      queriedTokens: 400,
      hitRatio: '0.25',
    });
    assert.equal(sumPoolPrefix([undefined, {}]), undefined);
  });
});

describe('pool prefix figures summed again', () => {
  it('keeps a Binding’s own ratio, which already leaves out the hits no query was counted for', () => {
    const binding = { hitTokens: 832, queriedTokens: 1536, hitRatio: '0.5' };
    assert.deepEqual(sumPoolPrefix([binding]), binding);
  });
});
