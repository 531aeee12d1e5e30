// An informer's waits, stepped on a manual clock: a failed list or watch is retried after a jittered
// backoff that doubles up to 30 s and starts again once a watch ran; 410 Gone relists at once; a watch
// silent past the server's timeout is abandoned; the cache is re-delivered every resync period. The
// jitter is pinned to its low end (half the backoff), so each retry is checked to the millisecond.
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it, mock } from 'node:test';
import type { KubeClient } from '../../src/kube/client.ts';
import { Informer } from '../../src/kube/informer.ts';
import { ManualClock } from '../support/manual-clock.ts';

type Reply = 'fail' | 'gone' | 'open';

/** An API whose lists and watches answer as the test says, recording `list@ms` and `watch@ms`. */
function scriptedApi(clock: ManualClock) {
  const api = {
    list: 'fail' as 'fail' | 'ok',
    watch: 'fail' as Reply,
    calls: [] as string[],
    close: () => {},
  };
  const client = {
    resources: { collectionPath: async () => '/api/v1/namespaces/a/configmaps' },
    request: async () => {
      api.calls.push(`list@${clock.now()}`);
      if (api.list === 'fail') throw new Error('connection refused');
      const items = [{ metadata: { name: 'one', namespace: 'a', resourceVersion: '7' } }];
      return { items, metadata: { resourceVersion: '7' } };
    },
    send: async (_method: string, _path: string, options: { signal: AbortSignal }) => {
      api.calls.push(`watch@${clock.now()}`);
      if (api.watch === 'fail') throw new Error('connection refused');
      if (api.watch === 'gone') {
        api.watch = 'open';
        return { statusCode: 410, body: { text: async () => '{"reason":"Expired","message":"too old"}' } };
      }
      // Open until the server closes it (close()) or the informer aborts it, as undici's body throws then.
      const closed = Promise.withResolvers<void>();
      api.close = closed.resolve;
      const aborted = new Promise<void>((_, reject) =>
        options.signal.addEventListener('abort', () => reject(new Error('watch aborted')), { once: true }),
      );
      const body = {
        [Symbol.asyncIterator]: () => ({
          next: async () => {
            await Promise.race([closed.promise, aborted]);
            return { done: true, value: undefined };
          },
        }),
      };
      return { statusCode: 200, body };
    },
  } as unknown as KubeClient;
  return { api, client };
}

/** Asserts the call `call` came at `ms` exactly: not by 1 ms before, and by then. */
async function expectAt(clock: ManualClock, calls: string[], call: string, ms: number) {
  await clock.runTo(ms - 1);
  assert.ok(!calls.includes(`${call}@${ms}`), `${call} before ${ms} ms`);
  const before = calls.length;
  await clock.runTo(ms);
  assert.equal(calls[before], `${call}@${ms}`, `${call} at ${ms} ms; calls: ${calls.join(', ')}`);
}

describe('Informer timing', () => {
  let clock: ManualClock;
  beforeEach(() => {
    clock = new ManualClock();
    mock.method(Math, 'random', () => 0);
  });
  afterEach(() => mock.restoreAll());

  it('retries a failed list after 0.5, 1, 2, 4, 8 s and then every 15 s (the 30 s cap, jittered)', async () => {
    const { api, client } = scriptedApi(clock);
    const informer = new Informer(client, { apiVersion: 'v1', kind: 'ConfigMap', clock });
    informer.start();
    await clock.runTo(0);
    assert.deepEqual(api.calls, ['list@0']);
    for (const ms of [500, 1500, 3500, 7500, 15_500, 30_500, 45_500])
      await expectAt(clock, api.calls, 'list', ms);
    assert.equal(informer.health().restarts, 8);
    await informer.stop();
  });

  it('retries a failed watch with the same backoff and no relist, and starts the backoff again once a watch ran', async () => {
    const { api, client } = scriptedApi(clock);
    api.list = 'ok';
    const informer = new Informer(client, { apiVersion: 'v1', kind: 'ConfigMap', clock });
    informer.start();
    await clock.runTo(0);
    assert.deepEqual(api.calls, ['list@0', 'watch@0']);
    await expectAt(clock, api.calls, 'watch', 500);
    api.watch = 'open';
    await expectAt(clock, api.calls, 'watch', 1500);
    assert.ok(informer.health().watching);
    // The server ends the watch (its timeout) at 2000: watched again at once, which fails; then 0.5 s, not 2 s.
    await clock.runTo(2000);
    api.watch = 'fail';
    api.close();
    await clock.runTo(2000);
    assert.deepEqual(api.calls.slice(-1), ['watch@2000']);
    await expectAt(clock, api.calls, 'watch', 2500);
    assert.ok(!api.calls.slice(1).some((c) => c.startsWith('list')), 'the resourceVersion was kept');
    await informer.stop();
  });

  it('relists at once when the watch answers 410 Gone', async () => {
    const { api, client } = scriptedApi(clock);
    api.list = 'ok';
    api.watch = 'gone';
    const informer = new Informer(client, { apiVersion: 'v1', kind: 'ConfigMap', clock });
    informer.start();
    await clock.runTo(0);
    assert.deepEqual(api.calls, ['list@0', 'watch@0', 'list@0', 'watch@0']);
    await informer.stop();
  });

  it('abandons a watch silent for 30 s past its server timeout (300 s) and retries it after the backoff', async () => {
    const { api, client } = scriptedApi(clock);
    api.list = 'ok';
    api.watch = 'open';
    const informer = new Informer(client, { apiVersion: 'v1', kind: 'ConfigMap', clock });
    informer.start();
    await clock.runTo(329_999);
    assert.ok(informer.health().watching, 'still watching 1 ms before the idle limit');
    await clock.runTo(330_000);
    assert.equal(informer.health().watching, false);
    await expectAt(clock, api.calls, 'watch', 330_500);
    await informer.stop();
  });

  it('stop() during a retry wait resolves without time passing, cancels the wait and lists no more', async () => {
    const { api, client } = scriptedApi(clock);
    const informer = new Informer(client, { apiVersion: 'v1', kind: 'ConfigMap', clock });
    informer.start();
    await clock.runTo(0);
    assert.equal(clock.pending, 1, 'waiting to retry');
    let stopped = false;
    void informer.stop().then(() => {
      stopped = true;
    });
    await clock.runTo(0);
    assert.ok(stopped, 'stop() resolved');
    assert.equal(clock.pending, 0, 'the wait was cancelled');
    await clock.runTo(60_000);
    assert.deepEqual(api.calls, ['list@0']);
  });

  it('re-delivers the cache every resync period, and stops with stop()', async () => {
    const { api, client } = scriptedApi(clock);
    api.list = 'ok';
    api.watch = 'open';
    const informer = new Informer(client, { apiVersion: 'v1', kind: 'ConfigMap', resyncMs: 1000, clock });
    const resyncs: number[] = [];
    informer.on((event) => {
      if (event === 'resync') resyncs.push(clock.now());
    });
    informer.start();
    await clock.runTo(999);
    assert.deepEqual(resyncs, []);
    await clock.runTo(2000);
    assert.deepEqual(resyncs, [1000, 2000]);
    await informer.stop();
    await clock.runTo(5000);
    assert.deepEqual(resyncs, [1000, 2000]);
    assert.equal(clock.pending, 0, 'no timer left');
  });
});
