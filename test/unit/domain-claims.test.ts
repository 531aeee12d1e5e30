// A domain's claim (a Lease named for backend and domain): the name is a valid DNS label and one per
// (backend, domain); the verdict frees a claim only when its Binding is gone and the grace has passed.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  claimName,
  judgeClaim,
  microTime,
  renderClaim,
  takeOverClaim,
} from '../../src/vocabulary/domain-claims.ts';

const dnsLabel = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const t0 = Date.parse('2026-01-01T00:00:00Z');
const holder = { namespace: 'team-a', name: 'qwen', uid: 'uid-a' };
const claim = (nowMs = t0) => renderClaim('gpustack-system', 'mooncake-dram', 'qwen-fp8-v1', holder, nowMs);

describe('claimName', () => {
  it('is a DNS-1123 label of at most 63 characters, for any backend and domain', () => {
    for (const [b, d] of [
      ['mooncake-dram', 'default'],
      ['a'.repeat(253), 'b'.repeat(63)],
      ['x.y.z', 'qwen-fp8-v1'],
    ] as const) {
      const name = claimName(b, d);
      assert.match(name, dnsLabel);
      assert.ok(name.length <= 63, name);
    }
  });

  it('is the same for one backend and domain, and differs when either differs', () => {
    assert.equal(claimName('b', 'd'), claimName('b', 'd'));
    assert.notEqual(claimName('b', 'd'), claimName('b2', 'd'));
    assert.notEqual(claimName('b', 'd'), claimName('b', 'd2'));
    // The separator keeps "ab"+"c" and "a"+"bc" apart.
    assert.notEqual(claimName('ab', 'c'), claimName('a', 'bc'));
  });
});

describe('renderClaim', () => {
  it('holds the Binding uid and names the Binding, backend and domain; acquireTime is a MicroTime', () => {
    const c = claim();
    assert.equal(c.spec?.holderIdentity, 'uid-a');
    assert.equal(c.spec?.acquireTime, '2026-01-01T00:00:00.000000Z');
    assert.equal(c.metadata.annotations?.['kvcache.gpustack.ai/binding'], 'team-a/qwen');
    assert.equal(c.metadata.annotations?.['kvcache.gpustack.ai/backend'], 'mooncake-dram');
    assert.equal(c.metadata.annotations?.['kvcache.gpustack.ai/domain'], 'qwen-fp8-v1');
    assert.equal(c.metadata.labels?.['app.kubernetes.io/component'], 'kvcache-domain-claim');
    assert.equal(microTime(t0 + 1234), '2026-01-01T00:00:01.234000Z');
  });
});

describe('judgeClaim', () => {
  const grace = 60_000;
  const live = (uid: string) => ({ metadata: { uid } });

  it('gives the claim to its own holder, whatever its age', () => {
    assert.deepEqual(judgeClaim(claim(), 'uid-a', undefined, t0 + 10 * grace, grace), { kind: 'ours' });
  });

  it('refuses another Binding while the holder exists, however old the claim', () => {
    assert.deepEqual(judgeClaim(claim(), 'uid-b', live('uid-a'), t0 + 10 * grace, grace), {
      kind: 'held',
      holder: { namespace: 'team-a', name: 'qwen' },
    });
  });

  it('keeps a young claim whose Binding is not stored yet: its create may still land', () => {
    assert.deepEqual(judgeClaim(claim(), 'uid-b', undefined, t0 + 15_000, grace), {
      kind: 'pending',
      lapsesInMs: 45_000,
    });
  });

  it('lets a claim be taken over once its Binding is gone and the grace has passed', () => {
    assert.deepEqual(judgeClaim(claim(), 'uid-b', undefined, t0 + grace, grace), { kind: 'takeOver' });
    // A Binding of the holder's name with another uid is a new one: the holder is gone.
    assert.deepEqual(judgeClaim(claim(), 'uid-b', live('uid-new'), t0 + grace, grace), {
      kind: 'takeOver',
    });
  });

  it('refuses to treat a Lease kvpool did not make as a claim', () => {
    const foreign = { ...claim(), metadata: { ...claim().metadata, labels: {} } };
    assert.deepEqual(judgeClaim(foreign, 'uid-a', undefined, t0, grace), { kind: 'foreign' });
  });

  it('a taken-over claim names its new holder and restarts its grace', () => {
    const taken = takeOverClaim(claim(), { namespace: 'team-b', name: 'n', uid: 'uid-b' }, t0 + grace);
    assert.equal(taken.spec?.holderIdentity, 'uid-b');
    assert.equal(taken.metadata.annotations?.['kvcache.gpustack.ai/binding'], 'team-b/n');
    assert.deepEqual(judgeClaim(taken, 'uid-c', undefined, t0 + grace + 1_000, grace), {
      kind: 'pending',
      lapsesInMs: 59_000,
    });
  });
});
