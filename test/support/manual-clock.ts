// A clock that moves only when a test advances it: timers due by then fire in the order they fall due,
// so a backoff or an age limit is stepped through exactly instead of slept through.
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
}
