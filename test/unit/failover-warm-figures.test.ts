// The warm-failover bench's derivations: which keys a tier file holds, and a run's figures from the
// reads after the kill (absent, not zero, when a figure was not observed).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  keysInTierFile,
  medianOrNull,
  objectKey,
  summarizeWarmRuns,
  warmRunFigures,
} from '../../bench/failover-warm-figures.ts';

describe('keysInTierFile', () => {
  it('finds the run’s keys among binary bytes, and no other run’s', () => {
    const bucket = Buffer.concat([
      Buffer.from([0, 1, 2, 250]),
      Buffer.from('warm-r1-0007warm-r1-0007|'),
      Buffer.alloc(64, 7),
      Buffer.from('warm-r10-0001warm-r2-0003'),
      Buffer.from('warm-r1-0123'),
    ]);
    assert.deepEqual([...keysInTierFile(bucket, 'warm-r1')].sort(), ['warm-r1-0007', 'warm-r1-0123']);
  });

  it('keys are fixed width, so none is the start of another', () => {
    assert.equal(objectKey('warm-r1', 7), 'warm-r1-0007');
    assert.equal(objectKey('warm-r1', 70), 'warm-r1-0070');
  });
});

describe('warmRunFigures', () => {
  const written = ['k-0000', 'k-0001', 'k-0002', 'k-0003'];
  const resident = new Set(['k-0000', 'k-0001']);

  it('times from the kill to the first and the last tier-resident hit; a key read twice counts at its first', () => {
    const f = warmRunFigures(1000, written, resident, [
      { key: 'k-0001', at: 9000, ok: true },
      { key: 'k-0000', at: 9500, ok: true },
      { key: 'k-0000', at: 9100, ok: true },
      { key: 'k-0002', at: 9200, ok: true },
    ]);
    assert.deepEqual(f, {
      written: 4,
      tierResident: 2,
      residentHit: 2,
      fraction: 1,
      firstHitMs: 8000,
      allHitMs: 8100,
      wrongBytes: 0,
      otherHits: 1,
    });
  });

  it('a key that never came back leaves kill→all absent; a wrong read is counted, not a hit', () => {
    const f = warmRunFigures(0, written, resident, [
      { key: 'k-0000', at: 5000, ok: true },
      { key: 'k-0001', at: 5100, ok: false },
    ]);
    assert.equal(f.fraction, 0.5);
    assert.equal(f.allHitMs, null);
    assert.equal(f.wrongBytes, 1);
  });

  it('nothing on the tier: no fraction and no times, not 0', () => {
    const f = warmRunFigures(0, written, new Set(), []);
    assert.equal(f.fraction, null);
    assert.equal(f.firstHitMs, null);
    assert.equal(f.allHitMs, null);
  });
});

describe('summarizeWarmRuns', () => {
  const run = (fraction: number | null, allHitMs: number | null, cold = 0) => ({
    warm: {
      written: 200,
      tierResident: 160,
      residentHit: 160,
      fraction,
      firstHitMs: allHitMs === null ? null : allHitMs - 500,
      allHitMs,
      wrongBytes: 0,
      otherHits: 0,
    },
    cold: { fraction: cold },
  });

  it('a run that never got every key counts as the slowest', () => {
    assert.equal(medianOrNull([4000, null, 5000]), 5000);
    assert.equal(medianOrNull([4000, null, null]), null);
  });

  it('medians, the cold backend’s worst run, and the targets', () => {
    const s = summarizeWarmRuns([run(1, 9000), run(1, 11_000), run(0.95, 20_000, 0.01)]);
    assert.equal(s.tierResidentHitFraction, 1);
    assert.equal(s.killToAllHitMs, 11_000);
    assert.equal(s.killToFirstHitMs, 10_500);
    assert.equal(s.tierResidentOfWritten, 0.8);
    assert.equal(s.coldHitFractionMax, 0.01);
    assert.deepEqual(s.met, { fraction: true, warmWithin: true });
    assert.deepEqual(summarizeWarmRuns([run(null, null)]).met, { fraction: false, warmWithin: false });
  });
});
