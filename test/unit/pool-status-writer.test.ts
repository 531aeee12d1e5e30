// The pool's status writer runs one job at a time, and only the newest of the jobs that waited.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { LatestStatusWriter } from '../../src/controllers/pool/status-writer.ts';

function gate() {
  let open = () => {};
  const opened = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { opened, open };
}

describe('LatestStatusWriter', () => {
  it('runs the newest waiting job after the one in flight, and skips the ones it superseded', async () => {
    const ran: string[] = [];
    const first = gate();
    const writer = new LatestStatusWriter((err) => assert.fail(String(err)));
    writer.submit(async () => {
      ran.push('first started');
      await first.opened;
      ran.push('first done');
    });
    writer.submit(async () => {
      ran.push('second');
    });
    writer.submit(async () => {
      ran.push('third');
    });
    assert.deepEqual(ran, ['first started']);
    first.open();
    await writer.idle();
    assert.deepEqual(ran, ['first started', 'first done', 'third']);
  });

  it('reports a failed job and goes on with the next', async () => {
    const errors: unknown[] = [];
    const ran: string[] = [];
    const writer = new LatestStatusWriter((err) => errors.push(err));
    const first = gate();
    writer.submit(async () => {
      await first.opened;
      throw new Error('conflict');
    });
    writer.submit(async () => {
      ran.push('next');
    });
    first.open();
    await writer.idle();
    assert.deepEqual(
      errors.map((e) => (e as Error).message),
      ['conflict'],
    );
    assert.deepEqual(ran, ['next']);
    writer.submit(async () => {
      ran.push('later');
    });
    await writer.idle();
    assert.deepEqual(ran, ['next', 'later']);
  });
});
