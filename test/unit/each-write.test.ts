// eachWrite runs a pass's writes, most of which find nothing to change and settle without any I/O. A
// thousand of those in a row held the event loop for the whole loop (awaiting a settled promise runs
// the next item as a microtask), so admission requests waited behind a pass: the loop must give timers
// and I/O their turn while it runs. The work's time passes on a manual clock, 0.5 ms an item.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { eachWrite } from '../../src/operator-io/apply.ts';
import { ManualClock } from '../support/manual-clock.ts';

describe('eachWrite', () => {
  it('gives the event loop a turn every 10 ms of a long loop of writes that change nothing', async () => {
    const clock = new ManualClock();
    const items = Array.from({ length: 400 }, (_, i) => i);
    let done = 0;
    let doneWhenCallbackRan: number | undefined;
    // Queued for the event loop's next turn, as a request's callback waiting behind the loop would be.
    setImmediate(() => {
      doneWhenCallbackRan = done;
    });
    await eachWrite(
      items,
      async () => {
        clock.advance(0.5); // deciding and comparing one status
        done++;
      },
      16,
      clock,
    );
    assert.ok(doneWhenCallbackRan !== undefined, 'the callback ran before the loop ended');
    // The first turn comes once 10 ms of work (20 items) passed; the 15 other workers may finish one each.
    assert.ok(
      doneWhenCallbackRan >= 20 && doneWhenCallbackRan <= 35,
      `the callback ran after ${doneWhenCallbackRan} of 400 items`,
    );
  });

  it('still attempts every item and throws the first failure once all settled', async () => {
    const seen: number[] = [];
    await assert.rejects(
      eachWrite([1, 2, 3, 4], async (i) => {
        seen.push(i);
        if (i % 2 === 0) throw new Error(`item ${i}`);
      }),
      /item 2/,
    );
    assert.deepEqual(seen.sort(), [1, 2, 3, 4]);
  });
});
