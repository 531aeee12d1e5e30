// An informer stopped while it lists (at start, or after its watch expired) ends at once: it opens no
// watch afterwards, which nothing would abort before the watch's own timeout (5-10 minutes).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { KubeClient } from '../../src/kube/client.ts';
import { Informer } from '../../src/kube/informer.ts';

/** A client whose list waits for `release`, and whose watch stays open until its signal aborts. */
function slowListClient() {
  const listing = Promise.withResolvers<void>();
  const release = Promise.withResolvers<void>();
  let watches = 0;
  const client = {
    resources: { collectionPath: async () => '/apis/example.com/v1/things' },
    request: async () => {
      listing.resolve();
      await release.promise;
      return { items: [], metadata: { resourceVersion: '7' } };
    },
    send: async (_method: string, _path: string, options: { signal: AbortSignal }) => {
      watches += 1;
      await new Promise((_, reject) =>
        options.signal.addEventListener('abort', () => reject(new Error('watch aborted')), { once: true }),
      );
    },
  } as unknown as KubeClient;
  return { client, listing: listing.promise, release: release.resolve, watches: () => watches };
}

describe('Informer.stop', () => {
  it('during the list: resolves once the list returns, and opens no watch', async () => {
    const c = slowListClient();
    const informer = new Informer(c.client, { apiVersion: 'example.com/v1', kind: 'Thing' });
    informer.start();
    await c.listing;
    const stopped = informer.stop();
    c.release();
    const outcome = await Promise.race([
      stopped.then(() => 'stopped'),
      new Promise((resolve) => setTimeout(() => resolve('still running after 2 s'), 2000).unref()),
    ]);
    assert.equal(outcome, 'stopped');
    assert.equal(c.watches(), 0);
  });

  it('while it waits to retry a failed list: resolves at once', async () => {
    let lists = 0;
    const client = {
      resources: { collectionPath: async () => '/apis/example.com/v1/things' },
      request: async () => {
        lists += 1;
        throw new Error('connection refused');
      },
    } as unknown as KubeClient;
    const informer = new Informer(client, { apiVersion: 'example.com/v1', kind: 'Thing' });
    informer.start();
    while (lists === 0) await new Promise((resolve) => setImmediate(resolve));
    // The first retry waits 0.5-1.5 s.
    const started = performance.now();
    await informer.stop();
    // Before the earliest retry (500 ms): the wait itself was cut short.
    assert.ok(performance.now() - started < 450, `stop took ${Math.round(performance.now() - started)} ms`);
    assert.equal(lists, 1);
  });
});
