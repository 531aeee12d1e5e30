import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { planRotation, type RotationPolicy, stagedCaPublishedSince } from '../../src/kube/cert-rotation.ts';

const day = 86_400_000;
const policy: RotationPolicy = {
  caValidDays: 3650,
  servingValidDays: 365,
  rotateAtRemainingFraction: 1 / 3,
  caPropagationMs: 5 * 60_000,
};
const now = 1_900_000_000_000;
const fresh = { caNotAfter: now + 3000 * day, servingNotAfter: now + 300 * day };

describe('planRotation', () => {
  it('creates everything when nothing exists, and keeps a pair with most of its life left', () => {
    assert.deepEqual(planRotation(undefined, now, policy), { ca: 'replace', serving: true });
    assert.deepEqual(planRotation(fresh, now, policy), { ca: 'keep', serving: false });
  });

  it('renews the serving certificate from the same CA once a third of its life remains', () => {
    const times = { ...fresh, servingNotAfter: now + 121 * day };
    assert.deepEqual(planRotation(times, now, policy), { ca: 'keep', serving: true });
    assert.deepEqual(planRotation({ ...times, servingNotAfter: now + 122 * day }, now, policy), {
      ca: 'keep',
      serving: false,
    });
  });

  it('stages a due CA without serving anything it signed, renewing the serving pair only if due', () => {
    const caDue = { ...fresh, caNotAfter: now + 1216 * day };
    assert.deepEqual(planRotation(caDue, now, policy), { ca: 'stage', serving: false });
    assert.deepEqual(planRotation({ ...caDue, servingNotAfter: now + day }, now, policy), {
      ca: 'stage',
      serving: true,
    });
  });

  it('promotes a staged CA only once every CA bundle has carried it for the propagation period', () => {
    const staged = { ...fresh, caNotAfter: now + 1000 * day, stagedCa: { publishedSince: now } };
    assert.deepEqual(planRotation(staged, now + 299_999, policy), { ca: 'keep', serving: false });
    assert.deepEqual(planRotation(staged, now + 300_000, policy), { ca: 'promote', serving: true });
  });

  it('never promotes a staged CA the API server was not given, however long ago it was staged', () => {
    const unpublished = { ...fresh, caNotAfter: now + 1000 * day, stagedCa: {} };
    assert.deepEqual(planRotation(unpublished, now + 30 * day, policy), { ca: 'keep', serving: false });
    assert.deepEqual(planRotation({ ...unpublished, servingNotAfter: now }, now, policy), {
      ca: 'keep',
      serving: true,
    });
  });

  it('does not wait for propagation when the CA has already expired', () => {
    assert.deepEqual(planRotation({ ...fresh, caNotAfter: now }, now, policy), {
      ca: 'replace',
      serving: true,
    });
    assert.deepEqual(planRotation({ ...fresh, caNotAfter: now, stagedCa: {} }, now, policy), {
      ca: 'promote',
      serving: true,
    });
  });
});

describe('stagedCaPublishedSince', () => {
  it('starts the wait when every CA bundle is first seen to carry the staged CA, and keeps it', () => {
    assert.equal(stagedCaPublishedSince(undefined, true, now), now);
    assert.equal(stagedCaPublishedSince(now - 60_000, true, now), now - 60_000);
  });

  it('forgets it as soon as one bundle lacks the staged CA, so the wait starts again', () => {
    assert.equal(stagedCaPublishedSince(undefined, false, now), undefined);
    assert.equal(stagedCaPublishedSince(now - 60_000, false, now), undefined);
  });
});
