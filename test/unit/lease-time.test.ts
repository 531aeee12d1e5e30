import assert from 'node:assert/strict';
import { test } from 'node:test';
import { microTime } from '../../src/kube/time.ts';

test('Lease timestamps carry exactly six fractional digits (MicroTime)', () => {
  assert.equal(microTime(new Date('2026-11-29T15:00:00.123Z')), '2026-11-29T15:00:00.123000Z');
  assert.match(microTime(), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
});
