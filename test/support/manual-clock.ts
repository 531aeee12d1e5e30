// A clock that moves only when a test advances it: timers due by then fire in the order they fall due,
// so a backoff or an age limit is stepped through exactly instead of slept through.
import { setImmediate as turn } from 'node:timers/promises';
import type { Clock, Timer } from '../../src/kube/clock.ts';

export class ManualClock implements Clock {
  private at = 0;
  private nextId = 0;
  private readonly timers = new Map<number, { due: number; fire: () => void }>();

  now(): number {
    return this.at;
  }

  after(delayMs: number, fire: () => void): Timer {
    const id = this.nextId++;
    this.timers.set(id, { due: this.at + Math.max(0, delayMs), fire });
    return { cancel: () => this.timers.delete(id) };
  }

  /** Timers set and neither fired nor cancelled. */
  get pending(): number {
    return this.timers.size;
  }

  /** When the earliest timer set falls due; undefined when none is set. */
  get nextDue(): number | undefined {
    let due: number | undefined;
    for (const timer of this.timers.values()) if (due === undefined || timer.due < due) due = timer.due;
    return due;
  }

  /** Moves time on by `ms`, firing each timer due by then at its due time (ties in the order set). */
  advance(ms: number): void {
    const target = this.at + ms;
    for (;;) {
      let next: [number, { due: number; fire: () => void }] | undefined;
      for (const entry of this.timers)
        if (entry[1].due <= target && (!next || entry[1].due < next[1].due)) next = entry;
      if (!next) break;
      this.timers.delete(next[0]);
      this.at = next[1].due;
      next[1].fire();
    }
    this.at = target;
  }

  /**
   * Moves time on to `at` one due timer at a time, letting the promises settled by each run before the
   * next, so the waits those set in turn are stepped through too. Code that waits on real I/O is not.
   */
  async runTo(at: number, maxTimers = 10_000): Promise<void> {
    if (at < this.at) throw new Error(`cannot run back to ${at} ms from ${this.at} ms`);
    await turn();
    for (let fired = 0; ; fired++) {
      const due = this.nextDue;
      if (due === undefined || due > at) break;
      if (fired >= maxTimers) throw new Error(`more than ${maxTimers} timers fell due by ${at} ms`);
      this.advance(due - this.at);
      await turn();
    }
    this.advance(at - this.at);
    await turn();
  }
}
