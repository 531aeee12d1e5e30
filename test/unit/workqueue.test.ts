// The work queue's guarantees: de-duplication, no concurrent runs of a key, backoff, delayed adds.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { WorkQueue } from '../../src/kube/workqueue.ts';

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
    await sleep(10);
    assert.equal(second, undefined, 'no second worker gets the running key');
    q.done(first!);
    await sleep(0);
    assert.equal(second, 'a', 'handed out again once done');
  });

  it('backs off exponentially per key and forgets on success', async () => {
    const q = new WorkQueue({ baseDelayMs: 20, maxDelayMs: 1000, qps: 1000, burst: 1000 });
    const timings: number[] = [];
    for (let i = 0; i < 3; i++) {
      const t0 = performance.now();
      q.addRateLimited('a');
      const k = await q.get();
      timings.push(performance.now() - t0);
      q.done(k!);
    }
    assert.equal(q.retries('a'), 3);
    assert.ok(
      timings[0]! >= 18 && timings[1]! >= 38 && timings[2]! >= 78,
      `delays ${timings.map(Math.round)}`,
    );
    q.forget('a');
    assert.equal(q.retries('a'), 0);
  });

  it('limits the overall retry rate with a token bucket', async () => {
    const q = new WorkQueue({ baseDelayMs: 1, maxDelayMs: 1, qps: 50, burst: 2 });
    const t0 = performance.now();
    for (const k of ['a', 'b', 'c', 'd']) q.addRateLimited(k);
    for (let i = 0; i < 4; i++) q.done((await q.get())!);
    // Two go at once (burst), the next two wait about 20 ms and 40 ms.
    assert.ok(performance.now() - t0 >= 35, `took ${performance.now() - t0} ms`);
  });

  it('keeps the earliest of several delayed adds', async () => {
    const q = new WorkQueue();
    q.addAfter('a', 5000);
    q.addAfter('a', 20);
    const t0 = performance.now();
    assert.equal(await q.get(), 'a');
    // Far below the later delay, so a stalled machine cannot blur the two.
    assert.ok(performance.now() - t0 < 2500);
    q.shutDown();
  });

  it('hands workers undefined on shutdown', async () => {
    const q = new WorkQueue();
    const waiting = q.get();
    q.shutDown();
    assert.equal(await waiting, undefined);
    q.add('a');
    assert.equal(await q.get(), undefined);
  });
});
