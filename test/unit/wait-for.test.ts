// waitFor: a throwing probe means "not yet", unless it says waiting cannot help; the tests' waitFor
// built on it also reports the last value it saw.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { WaitAborted, waitFor } from '../../src/kube/wait-for.ts';
import { waitFor as supportWaitFor } from '../support/wait.ts';

describe('waitFor', () => {
  it('keeps polling through ordinary errors and resolves with the first value', async () => {
    let calls = 0;
    const value = await waitFor(
      () => {
        calls += 1;
        if (calls < 3) throw new Error('connection refused');
        return 'up';
      },
      { what: 'a server', timeoutMs: 5000, intervalMs: 1 },
    );
    assert.deepEqual([value, calls], ['up', 3]);
  });

  it('names what it awaited and the last error when it times out', async () => {
    await assert.rejects(
      waitFor(
        () => {
          throw new Error('connection refused');
        },
        { what: 'a server', timeoutMs: 20, intervalMs: 1 },
      ),
      /timed out after 20 ms waiting for a server: last error: connection refused/,
    );
  });

  it('stops at once when the probe throws WaitAborted', async () => {
    const started = Date.now();
    await assert.rejects(
      waitFor(
        () => {
          throw new WaitAborted('etcd exited');
        },
        { what: 'etcd', timeoutMs: 60_000 },
      ),
      (err: unknown) => err instanceof WaitAborted && err.message === 'etcd exited',
    );
    assert.ok(Date.now() - started < 10_000);
  });
});

describe("tests' waitFor (test/support/wait.ts)", () => {
  it('resolves with the first value read that passes `until`', async () => {
    let n = 0;
    const value = await supportWaitFor(() => ++n, {
      what: 'three reads',
      until: (v) => v >= 3,
      intervalMs: 1,
    });
    assert.equal(value, 3);
  });

  it('names what it awaited and the last value seen when it times out', async () => {
    await assert.rejects(
      supportWaitFor(() => ({ phase: 'Pending' }), {
        what: 'the pool to be Ready',
        until: (p) => p.phase === 'Ready',
        timeoutMs: 20,
        intervalMs: 1,
      }),
      /timed out after 20 ms waiting for the pool to be Ready; last seen: \{ phase: 'Pending' \}/,
    );
  });

  it('says so when no read succeeded', async () => {
    await assert.rejects(
      supportWaitFor(
        () => {
          throw new Error('connection refused');
        },
        { what: 'a server', timeoutMs: 20, intervalMs: 1 },
      ),
      /waiting for a server: last error: connection refused; no read succeeded/,
    );
  });
});
