// eachWrite runs a pass's writes, most of which find nothing to change and settle without any I/O. A
// thousand of those in a row held the event loop for the whole loop (awaiting a settled promise runs
// the next item as a microtask), so admission requests waited behind a pass: the loop must give timers
// and I/O their turn while it runs.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { eachWrite } from '../../src/operator-io/apply.ts';

/** Keeps the thread busy for `ms`, as deciding and comparing one status does. */
function busy(ms: number) {
  const end = performance.now() + ms;
  while (performance.now() < end);
}

describe('eachWrite', () => {
  it('lets a timer due during a long loop of writes that change nothing run before the loop ends', async () => {
    const items = Array.from({ length: 400 }, (_, i) => i);
    let done = 0;
    let doneWhenTimerRan: number | undefined;
    setTimeout(() => {
      doneWhenTimerRan = done;
    }, 0);
    await eachWrite(items, async () => {
      busy(0.5);
      done++;
    });
    assert.ok(doneWhenTimerRan !== undefined, 'the timer ran before the loop ended');
    // A turn every 10 ms of work: the timer runs after about 20 items, whatever the machine's load.
    assert.ok(doneWhenTimerRan < 100, `the timer ran after ${doneWhenTimerRan} of 400 items`);
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
