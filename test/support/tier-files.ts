// What a member's disk tier holds, read from its files on the node. The store's bucket backend writes
// each object of a bucket as its key followed by its bytes into a `<id>.bucket` file, so an object whose
// exact bytes follow its key in such a file is on the tier, whatever the master says.
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';

export const sha256 = (data: Buffer) => createHash('sha256').update(data).digest('hex');

/** An object written through the store: its size and checksum. */
export interface Written {
  size: number;
  sha: string;
}

/** Every regular file of a directory with its checksum (a missing directory reads as empty). */
export function tierFiles(dir: string): Map<string, string> {
  const files = new Map<string, string>();
  let names: string[] = [];
  try {
    names = readdirSync(dir);
  } catch {
    return files;
  }
  for (const name of names.sort()) {
    const path = join(dir, name);
    if (statSync(path).isFile()) files.set(name, sha256(readFileSync(path)));
  }
  return files;
}

/**
 * The keys of `written` found in the directory's bucket files followed by their exact bytes. Keys
 * share `prefix` and have one length, so one pass over each file finds them all.
 */
export function keysOnTier(dir: string, written: Map<string, Written>, prefix: string): Set<string> {
  const found = new Set<string>();
  const keyLength = [...written.keys()][0]?.length ?? 0;
  const marker = Buffer.from(prefix);
  for (const name of tierFiles(dir).keys()) {
    if (!name.endsWith('.bucket')) continue;
    const file = readFileSync(join(dir, name));
    for (let at = file.indexOf(marker); at >= 0; at = file.indexOf(marker, at + 1)) {
      const key = file.subarray(at, at + keyLength).toString('latin1');
      const object = written.get(key);
      if (!object) continue;
      const start = at + keyLength;
      if (sha256(file.subarray(start, start + object.size)) === object.sha) found.add(key);
    }
  }
  return found;
}
