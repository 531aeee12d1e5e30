// The engines' counters are cumulative, so what CacheAttached is decided from is what they did between
// successive readings of each replica: a replica that worked and then started failing must read as
// failing, though its old successes stay in its totals.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { CacheReports } from '../../src/store/replica-reports.ts';
import { advanceTrend, changeOf, emptyTrend, readingOf, type Trend } from '../../src/store/replica-trend.ts';

const a = '10.0.0.1:8000';
const b = '10.0.0.2:8000';
const at = (s: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, s));

/** Readings one after another, one second apart; each round maps endpoints to what they answered. */
function run(rounds: Record<string, CacheReports>[], followed = [a, b]): Trend {
  return rounds.reduce(
    (t, round, i) => advanceTrend(t, new Map(Object.entries(round)), followed, at(i)),
    emptyTrend(),
  );
}

describe('changeOf', () => {
  it('is the growth of each counter; a counter that went down restarted from 0; the first reading is the totals', () => {
    assert.deepEqual(changeOf({ storedKeys: 10, failedKeys: 2 }, { storedKeys: 7, failedKeys: 2 }), {
      storedKeys: 3,
    });
    assert.deepEqual(changeOf({ storedKeys: 4 }, { storedKeys: 9 }), { storedKeys: 4 });
    assert.deepEqual(changeOf({ storedKeys: 4, prefixHitTokens: 0 }, undefined), { storedKeys: 4 });
  });
});

describe('advanceTrend and readingOf', () => {
  it('reads active from the first reading’s totals (a replica already at work when the operator starts)', () => {
    const r = readingOf(run([{ [a]: { storedKeys: 40, failedKeys: 3 } }]));
    assert.equal(r?.recent, 'active');
    assert.equal(r?.lastSuccessAt, '2026-01-01T00:00:00Z');
    assert.deepEqual(r?.totals, { storedKeys: 40, failedKeys: 3 });
  });

  it('turns failing when a replica that worked only fails after, counting the keys failed since its last success', () => {
    const t = run([
      { [a]: { storedKeys: 40, loadedKeys: 8, failedKeys: 0 } },
      { [a]: { storedKeys: 44, loadedKeys: 8, failedKeys: 1 } },
      { [a]: { storedKeys: 44, loadedKeys: 8, failedKeys: 5 } },
      { [a]: { storedKeys: 44, loadedKeys: 8, failedKeys: 12 } },
    ]);
    assert.deepEqual(readingOf(t), {
      totals: { storedKeys: 44, loadedKeys: 8, failedKeys: 12 },
      recent: 'failing',
      failedKeys: 11,
      lastSuccessAt: '2026-01-01T00:00:01Z',
    });
  });

  it('stays failing while idle, and turns active again on the next success', () => {
    const failing = [{ [a]: { storedKeys: 4 } }, { [a]: { storedKeys: 4, failedKeys: 2 } }];
    const idle = run([...failing, { [a]: { storedKeys: 4, failedKeys: 2 } }]);
    assert.equal(readingOf(idle)?.recent, 'failing');
    const back = run([...failing, { [a]: { storedKeys: 5, failedKeys: 2 } }]);
    assert.equal(readingOf(back)?.recent, 'active');
    assert.equal(readingOf(back)?.failedKeys, undefined);
  });

  it('is failing with no success time when the replicas never stored or loaded anything', () => {
    const r = readingOf(
      run([{ [a]: { storedKeys: 0, failedKeys: 4 } }, { [a]: { failedKeys: 6, storedKeys: 0 } }]),
    );
    assert.deepEqual(r, { totals: { storedKeys: 0, failedKeys: 6 }, recent: 'failing', failedKeys: 6 });
  });

  it('is quiet while the replicas report counters that never moved', () => {
    const r = readingOf(run([{ [a]: { prefixQueriedTokens: 0, prefixHitTokens: 0 } }]));
    assert.equal(r?.recent, 'quiet');
  });

  it('gives no reading while no replica reported anything (absent, not zero)', () => {
    assert.equal(readingOf(run([{ [a]: {} }, {}])), undefined);
    assert.equal(readingOf(emptyTrend()), undefined);
  });

  it('sums the replicas, keeps the last reading of one that did not answer, and drops one no longer followed', () => {
    const t = run([
      { [a]: { storedKeys: 4, prefixHitTokens: 64 }, [b]: { storedKeys: 2, prefixHitTokens: 32 } },
      { [a]: { storedKeys: 4, prefixHitTokens: 64 } },
    ]);
    assert.deepEqual(readingOf(t)?.totals, { storedKeys: 6, prefixHitTokens: 96 });
    const gone = advanceTrend(t, new Map([[a, { storedKeys: 4, prefixHitTokens: 64 }]]), [a], at(9));
    assert.deepEqual(readingOf(gone)?.totals, { storedKeys: 4, prefixHitTokens: 64 });
  });

  it('counts a new replica’s totals and a restarted one’s counters from 0, not as failures or losses', () => {
    const t = run([
      { [a]: { storedKeys: 40, failedKeys: 0 } },
      { [a]: { storedKeys: 40, failedKeys: 3 } },
      // The replica restarted: its counters start again.
      { [a]: { storedKeys: 2, failedKeys: 0 } },
    ]);
    assert.equal(readingOf(t)?.recent, 'active');
  });
});
