// A shared live read for admission: never older than the caller's request, one read for many callers.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FreshRead } from '../../src/webhooks/fresh-read.ts';

/** A loader whose reads the test finishes one by one; each read returns its start order. */
function loader() {
  const pending: ((n: number) => void)[] = [];
  let started = 0;
  return {
    load: () => {
      const n = ++started;
      return new Promise<number>((resolve) => pending.push(() => resolve(n)));
    },
    finish: async () => {
      pending.shift()?.(0);
      await new Promise((r) => setImmediate(r));
    },
    get started() {
      return started;
    },
  };
}

describe('FreshRead', () => {
  it('starts a read at once when none is in flight', async () => {
    const l = loader();
    const r = new FreshRead(l.load);
    const a = r.get();
    assert.equal(l.started, 1);
    await l.finish();
    assert.equal(await a, 1);
  });

  it('never hands a caller a read that started before it asked; callers meanwhile share the next one', async () => {
    const l = loader();
    const r = new FreshRead(l.load);
    const first = r.get();
    const waiting = Array.from({ length: 50 }, () => r.get());
    assert.equal(l.started, 1, 'nothing more starts while a read is in flight');
    await l.finish();
    assert.equal(await first, 1);
    assert.equal(l.started, 2, 'one read for the fifty that waited');
    await l.finish();
    assert.deepEqual(new Set(await Promise.all(waiting)), new Set([2]));
  });

  it('starts afresh after a failed read', async () => {
    let calls = 0;
    const r = new FreshRead(async () => {
      calls += 1;
      if (calls === 1) throw new Error('apiserver unavailable');
      return calls;
    });
    await assert.rejects(r.get(), /unavailable/);
    assert.equal(await r.get(), 2);
  });
});
