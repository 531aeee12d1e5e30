// The time a component reads and the timers it sets, passed in so that a test can step time instead
// of waiting for it. Production code takes realClock.

/** A timer that has been set; cancel() before it fires stops it, after is a no-op. */
export interface Timer {
  cancel(): void;
}

export interface Clock {
  /** Milliseconds on a monotonic scale: only differences between readings mean anything. */
  now(): number;
  /** Calls `fire` once `delayMs` have passed. The timer does not keep the process alive. */
  after(delayMs: number, fire: () => void): Timer;
}

export const realClock: Clock = {
  now: () => performance.now(),
  after(delayMs, fire) {
    const timer = setTimeout(fire, delayMs);
    timer.unref();
    return { cancel: () => clearTimeout(timer) };
  },
};
