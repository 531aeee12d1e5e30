// An informer stopped while it lists (at start, or after its watch expired) ends at once: it opens no
// watch afterwards, which nothing would abort before the watch's own timeout (5-10 minutes).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { setImmediate as turn } from 'node:timers/promises';
import type { KubeClient } from '../../src/kube/client.ts';
import { Informer } from '../../src/kube/informer.ts';
import { ManualClock } from '../support/manual-clock.ts';

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
    let stopped = false;
    void informer.stop().then(() => {
      stopped = true;
    });
    c.release();
    await turn(); // every promise settled by now has run its callbacks
    assert.ok(stopped, 'stop() resolved once the list returned');
    assert.equal(c.watches(), 0);
  });

  it('while it waits to retry a failed list: resolves at once, with no time passing', async () => {
    let lists = 0;
    const client = {
      resources: { collectionPath: async () => '/apis/example.com/v1/things' },
      request: async () => {
        lists += 1;
        throw new Error('connection refused');
      },
    } as unknown as KubeClient;
    const clock = new ManualClock();
    const informer = new Informer(client, { apiVersion: 'example.com/v1', kind: 'Thing', clock });
    informer.start();
    await turn();
    assert.equal(lists, 1);
    assert.equal(clock.pending, 1, 'the first retry waits (0.5-1.5 s)');
    let stopped = false;
    void informer.stop().then(() => {
      stopped = true;
    });
    await turn();
    assert.ok(stopped, 'the wait itself was cut short: stop() resolved with no time passing');
    assert.equal(clock.pending, 0);
    assert.equal(lists, 1);
  });
});
