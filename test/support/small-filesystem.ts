// A filesystem of a given size for a test (a tmpfs, which needs root): a disk tier that fills.
import { execFileSync } from 'node:child_process';
import { readFileSync, statfsSync } from 'node:fs';

/** Mounts a tmpfs of `bytes` on `dir`; the test unmounts it. */
export function mountTmpfs(dir: string, bytes: number): void {
  execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${bytes},mode=0755`, 'tmpfs', dir]);
  const { blocks, bsize } = statfsSync(dir);
  if (Number(blocks) * Number(bsize) !== bytes)
    throw new Error(`tmpfs on ${dir} has ${Number(blocks) * Number(bsize)} bytes, not ${bytes}`);
}

export function isMountPoint(dir: string): boolean {
  return readFileSync('/proc/self/mounts', 'utf8')
    .split('\n')
    .some((line) => line.split(' ')[1] === dir);
}

export function unmount(dir: string): void {
  execFileSync('umount', [dir]);
}
