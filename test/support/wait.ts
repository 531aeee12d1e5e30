// The one way tests wait: read until the value awaited appears, or fail naming what was awaited and
// what was seen last. Built on the runtime's poll loop (src/kube/wait-for.ts).
import { inspect } from 'node:util';
import type { KubeClient } from '../../src/kube/client.ts';
import type { ObjectRef } from '../../src/kube/resources.ts';
import { waitFor as poll, WaitAborted } from '../../src/kube/wait-for.ts';

export { WaitAborted };

export interface WaitOptions<T> {
  /** What is awaited, for the timeout's message. */
  what: string;
  /** 60 s unless said. */
  timeoutMs?: number;
  /** 100 ms unless said. */
  intervalMs?: number;
  /** Whether a value read is the one awaited; without it, any value but undefined is. */
  until?: (value: T) => boolean;
}

/**
 * Resolves with the first value `read` gives that is awaited. A read that throws counts as not yet,
 * unless it throws WaitAborted (waiting longer cannot help).
 */
export async function waitFor<T>(
  read: () => Promise<T | undefined> | T | undefined,
  options: WaitOptions<T>,
): Promise<T> {
  const { what, timeoutMs = 60_000, intervalMs = 100, until } = options;
  let seen: { value: T | undefined } | undefined;
  try {
    return await poll(
      async () => {
        const value = await read();
        seen = { value };
        return value !== undefined && (!until || until(value)) ? value : undefined;
      },
      { what, timeoutMs, intervalMs },
    );
  } catch (err) {
    if (err instanceof WaitAborted || !(err instanceof Error)) throw err;
    const last = seen
      ? `last seen: ${inspect(seen.value, { depth: 6, breakLength: Infinity }).slice(0, 2000)}`
      : 'no read succeeded';
    throw new Error(`${err.message}; ${last}`);
  }
}

/** Waits until the object `ref` names no longer exists. */
export async function untilGone(
  client: Pick<KubeClient, 'find'>,
  ref: ObjectRef,
  options: Omit<WaitOptions<true>, 'until'>,
): Promise<void> {
  await waitFor(async () => ((await client.find(ref)) ? undefined : true), options);
}
