// The time a component reads and the timers it sets, passed in so that a test can step time instead
// of waiting for it. Production code takes realClock.

/** A timer that has been set; cancel() before it fires stops it, after is a no-op. */
export interface Timer {
  cancel(): void;
}

export interface TimerOptions {
  /** Keep the process alive while the timer is pending, as a plain setTimeout does. */
  keepAlive?: boolean;
}

export interface Clock {
  /** Milliseconds on a monotonic scale: only differences between readings mean anything. */
  now(): number;
  /** Calls `fire` once `delayMs` have passed. The timer does not keep the process alive unless asked to. */
  after(delayMs: number, fire: () => void, options?: TimerOptions): Timer;
}

export const realClock: Clock = {
  now: () => performance.now(),
  after(delayMs, fire, options) {
    const timer = setTimeout(fire, delayMs);
    if (!options?.keepAlive) timer.unref();
    return { cancel: () => clearTimeout(timer) };
  },
};

/**
 * Resolves once `delayMs` have passed on `clock`, or at once when `signal` aborts (the timer is then
 * cancelled). Keeps the process alive meanwhile, as the promise form of setTimeout does.
 */
export function pause(clock: Clock, delayMs: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const done = () => {
      timer.cancel();
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = clock.after(delayMs, done, { keepAlive: true });
    signal?.addEventListener('abort', done, { once: true });
  });
}

/**
 * A signal that aborts as AbortSignal.timeout's does (a TimeoutError) once `delayMs` have passed on
 * `clock`; cancel() the timer once the work it bounds has settled.
 */
export function timeoutSignal(clock: Clock, delayMs: number): { signal: AbortSignal; timer: Timer } {
  const controller = new AbortController();
  const timer = clock.after(delayMs, () =>
    controller.abort(new DOMException('The operation was aborted due to timeout', 'TimeoutError')),
  );
  return { signal: controller.signal, timer };
}
