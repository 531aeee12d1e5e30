// The work queue's guarantees: de-duplication, no concurrent runs of a key, backoff, delayed adds.
// Delays run on a manual clock the tests step, so each is checked to the millisecond without waiting.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { setImmediate as turn } from 'node:timers/promises';
import { WorkQueue } from '../../src/kube/workqueue.ts';
import { ManualClock } from '../support/manual-clock.ts';

/** Steps the clock a millisecond at a time until a key is queued, processes it, and says how long it waited. */
async function retryDelay(q: WorkQueue, clock: ManualClock): Promise<number> {
  const from = clock.now();
  while (q.depth === 0) {
    assert.ok(clock.now() - from < 10_000, 'nothing was queued within 10 s');
    clock.advance(1);
  }
  q.done((await q.get())!);
  return clock.now() - from;
}

describe('WorkQueue', () => {
  it('holds a key once however often it is added', async () => {
    const q = new WorkQueue();
    q.add('a');
    q.add('b');
    q.add('a');
    assert.equal(q.depth, 2);
    assert.equal(await q.get(), 'a');
    assert.equal(await q.get(), 'b');
  });

  it('never hands out a key that is being processed; an add meanwhile re-queues it after done', async () => {
    const q = new WorkQueue();
    q.add('a');
    const first = await q.get();
    q.add('a');
    assert.equal(q.depth, 0, 'the key waits outside the queue while it runs');
    let second: string | undefined;
    void q.get().then((k) => {
      second = k;
    });
    await turn(); // every promise settled by now has run its callbacks
    assert.equal(second, undefined, 'no second worker gets the running key');
    q.done(first!);
    await turn();
    assert.equal(second, 'a', 'handed out again once done');
  });

  it('backs off exponentially per key and forgets on success', async () => {
    const clock = new ManualClock();
    const q = new WorkQueue({ baseDelayMs: 20, maxDelayMs: 1000, qps: 1000, burst: 1000 }, undefined, clock);
    const delays: number[] = [];
    for (let i = 0; i < 3; i++) {
      q.addRateLimited('a');
      delays.push(await retryDelay(q, clock));
    }
    assert.deepEqual(delays, [20, 40, 80]);
    assert.equal(q.retries('a'), 3);
    q.forget('a');
    assert.equal(q.retries('a'), 0);
    q.addRateLimited('a');
    assert.equal(await retryDelay(q, clock), 20, 'after forget the backoff starts again at the base delay');
  });

  it('caps the per-key backoff at maxDelayMs', async () => {
    const clock = new ManualClock();
    const q = new WorkQueue({ baseDelayMs: 20, maxDelayMs: 50, qps: 1000, burst: 1000 }, undefined, clock);
    const delays: number[] = [];
    for (let i = 0; i < 4; i++) {
      q.addRateLimited('a');
      delays.push(await retryDelay(q, clock));
    }
    assert.deepEqual(delays, [20, 40, 50, 50]);
  });

  it('limits the overall retry rate with a token bucket', async () => {
    const clock = new ManualClock();
    const q = new WorkQueue({ baseDelayMs: 1, maxDelayMs: 1, qps: 50, burst: 2 }, undefined, clock);
    for (const k of ['a', 'b', 'c', 'd']) q.addRateLimited(k);
    // Two go after the per-key 1 ms (the burst), the next two wait for a token: 20 ms and 40 ms at 50/s.
    const queuedAt = (ms: number) => {
      clock.advance(ms - clock.now());
      return q.depth;
    };
    assert.deepEqual([1, 19, 20, 39, 40].map(queuedAt), [2, 2, 3, 3, 4]);
    assert.deepEqual([await q.get(), await q.get(), await q.get(), await q.get()], ['a', 'b', 'c', 'd']);
  });

  it('keeps the earliest of several delayed adds', async () => {
    const clock = new ManualClock();
    const q = new WorkQueue({}, undefined, clock);
    q.addAfter('a', 5000);
    q.addAfter('a', 20);
    assert.equal(clock.pending, 1, 'the later timer is cancelled');
    q.addAfter('a', 30);
    assert.equal(clock.pending, 1, 'a later delay leaves the earlier timer');
    clock.advance(20);
    assert.equal(await q.get(), 'a');
    q.done('a');
    clock.advance(5000);
    assert.equal(q.depth, 0, 'the key is added once');
  });

  it('fires a delayed add on the real clock by default', async (t) => {
    // The real clock's timers, faked: the default is wired to setTimeout without waiting on it.
    t.mock.timers.enable({ apis: ['setTimeout'] });
    const q = new WorkQueue();
    q.addAfter('a', 1000);
    t.mock.timers.tick(999);
    assert.equal(q.depth, 0);
    t.mock.timers.tick(1);
    assert.equal(await q.get(), 'a');
    q.shutDown();
  });

  it('cancels delayed adds and hands workers undefined on shutdown', async () => {
    const clock = new ManualClock();
    const q = new WorkQueue({}, undefined, clock);
    q.addAfter('b', 10);
    const waiting = q.get();
    q.shutDown();
    assert.equal(await waiting, undefined);
    assert.equal(clock.pending, 0, 'no timer left to fire');
    q.add('a');
    assert.equal(await q.get(), undefined);
  });
});
