// Long loops of work that settles without I/O (a pass comparing a thousand statuses that did not change)
// run as microtasks and hold the event loop until they end: admission requests, timers and watch events
// wait behind them. A loop calls the yielder between items and gives them a turn every `budgetMs`.
import { setImmediate as nextTurn } from 'node:timers/promises';
import { type Clock, realClock } from './clock.ts';

/** Resolves at once, or after a turn of the event loop once `budgetMs` passed since the last turn. */
export function eventLoopYielder(clock: Pick<Clock, 'now'> = realClock, budgetMs = 10): () => Promise<void> {
  let since = clock.now();
  return async () => {
    if (clock.now() - since < budgetMs) return;
    await nextTurn();
    since = clock.now();
  };
}
