// Polls until a condition holds, or fails with a message that says what was awaited.
import { setTimeout as sleep } from 'node:timers/promises';

export interface WaitOptions {
  timeoutMs: number;
  intervalMs?: number;
  /** What is being awaited, for the error message. */
  what: string;
}

/** Thrown by a probe when waiting longer cannot help (the awaited process has exited): ends the wait at once. */
export class WaitAborted extends Error {}

/**
 * Resolves with the first non-undefined value `probe` returns. A probe that throws counts as not yet,
 * unless it throws WaitAborted.
 */
export async function waitFor<T>(
  probe: () => Promise<T | undefined> | T | undefined,
  options: WaitOptions,
): Promise<T> {
  const deadline = Date.now() + options.timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value !== undefined) return value;
    } catch (err) {
      if (err instanceof WaitAborted) throw err;
      lastError = err;
    }
    if (Date.now() >= deadline) {
      const why = lastError instanceof Error ? `: last error: ${lastError.message}` : '';
      throw new Error(`timed out after ${options.timeoutMs} ms waiting for ${options.what}${why}`);
    }
    await sleep(options.intervalMs ?? 100);
  }
}
