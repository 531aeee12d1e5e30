// Locks between processes of this machine: a file created exclusively, holding its owner's PID. A lock
// whose owner died is taken over, so a killed run never blocks the next one.
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';

export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** The lock's owner, or undefined when there is no lock (or it is being written or removed). */
function ownerOf(lock: string): number | undefined {
  try {
    return Number(readFileSync(lock, 'utf8').trim()) || undefined;
  } catch {
    return undefined;
  }
}

/** Takes the lock if it is free or its owner is gone; false when a live process holds it. */
export function tryLock(lock: string): boolean {
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      writeFileSync(lock, `${process.pid}\n`, { flag: 'wx' });
      return true;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      const owner = ownerOf(lock);
      if (owner === undefined) continue; // just released, or its owner is still writing it
      if (processAlive(owner)) return false;
      rmSync(lock, { force: true });
    }
  }
  return false;
}

/** Runs `fn` holding the lock, waiting for it as long as a live process holds it. */
export async function withLock<T>(lock: string, fn: () => Promise<T>): Promise<T> {
  while (!tryLock(lock)) await sleep(200);
  try {
    return await fn();
  } finally {
    rmSync(lock, { force: true });
  }
}
