// The project's images, imported once into a containerd state kept in the cache, which each node's
// containerd then starts from. Importing and unpacking ~1 GiB per node took most of a cluster's start;
// a node's copy is made of hard links instead (content blobs and unpacked layers are never written to
// again), and only the databases containerd writes in place are real copies.
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { withLock } from '../../images/file-lock.ts';
import { cacheDir, toolchainValue } from '../../images/toolchain.ts';
import { waitFor } from '../../src/kube/wait-for.ts';
import { startProcess } from '../processes.ts';
import { nodeBinary } from '../toolchain.ts';

const run = promisify(execFile);

/** How many prepared stores the cache keeps (most share their files), the most recently used. */
const keptStores = 8;

function pruneStores(base: string, keep: number, spare: string[] = []): void {
  const stores = readdirSync(base)
    .map((name) => join(base, name, '.complete'))
    .filter((f) => existsSync(f) && !spare.includes(join(f, '..')))
    .sort((a, b) => statSync(b).mtimeMs - statSync(a).mtimeMs);
  for (const f of stores.slice(keep)) rmSync(join(f, '..'), { recursive: true, force: true });
}

/**
 * A containerd root holding every archive of `layers` imported (namespace k8s.io) and unpacked; made
 * once. Each layer is a store of its own, made from a copy of the one below it: the images that change
 * with the source (the operator's and the store's) go last, so a source change imports them alone on
 * top of a store that already holds the rest, the 6 GB engine image among them, instead of everything.
 */
export async function preparedImageStore(layers: string[][]): Promise<string> {
  let below: string | undefined;
  const seen: string[] = [];
  for (const archives of layers.filter((l) => l.length)) {
    seen.push(...archives);
    below = await preparedLayer(seen, archives, below);
  }
  if (!below) throw new Error('no image to prepare');
  return below;
}

/** The store of `all` archives: `below`'s (holding the others), with `archives` imported on top. */
async function preparedLayer(all: string[], archives: string[], below: string | undefined): Promise<string> {
  const key = createHash('sha256')
    .update([toolchainValue('CONTAINERD_VERSION'), ...all].join('\n'))
    .digest('hex')
    .slice(0, 16);
  const base = join(cacheDir(), 'node-images');
  const dir = join(base, key);
  const complete = join(dir, '.complete');
  if (existsSync(complete)) {
    utimesSync(complete, new Date(), new Date());
    return join(dir, 'root');
  }
  mkdirSync(base, { recursive: true });
  return withLock(join(base, '.lock'), async () => {
    if (existsSync(complete)) return join(dir, 'root');
    pruneStores(base, keptStores - 1, below ? [join(below, '..')] : []);
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir, { recursive: true });
    if (below) await seedContainerdRoot(below, join(dir, 'root'));
    await importInto(dir, archives);
    writeFileSync(join(dir, '.complete'), '');
    return join(dir, 'root');
  });
}

/** Imports `archives` into the containerd root under `dir` with a containerd of its own. */
async function importInto(dir: string, archives: string[]): Promise<void> {
  const socket = join(dir, 'import.sock');
  const config = join(dir, 'config.toml');
  writeFileSync(
    config,
    `version = 3\nroot = "${join(dir, 'root')}"\nstate = "${join(dir, 'state')}"\n[grpc]\n  address = "${socket}"\n`,
  );
  const containerd = startProcess('containerd-image-import', nodeBinary('containerd'), {
    logDir: dir,
    args: ['--config', config, '--log-level', 'error'],
  });
  try {
    const ctr = (...args: string[]) =>
      run(nodeBinary('ctr'), ['--address', socket, ...args], { maxBuffer: 16 << 20 });
    await waitFor(async () => ((await ctr('version').catch(() => undefined)) ? true : undefined), {
      what: `containerd to import images (log: ${containerd.logFile})`,
      timeoutMs: 30_000,
    });
    for (const archive of archives) await ctr('-n', 'k8s.io', 'images', 'import', '--digests', archive);
  } finally {
    await containerd.stop();
  }
  rmSync(join(dir, 'state'), { recursive: true, force: true });
}

/** Makes `dest` a node's containerd root holding the prepared images. */
export async function seedContainerdRoot(prepared: string, dest: string): Promise<void> {
  rmSync(dest, { recursive: true, force: true });
  mkdirSync(join(dest, '..'), { recursive: true });
  // Hard links need the cache and the cluster on one file system; otherwise a full copy.
  await run('cp', ['-al', prepared, dest]).catch(async () => {
    rmSync(dest, { recursive: true, force: true });
    await run('cp', ['-a', '--reflink=auto', prepared, dest]);
  });
  // Databases are written in place: each node gets its own copy.
  const copyDatabases = async (dir: string): Promise<void> => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory() && entry.name !== 'snapshots' && entry.name !== 'blobs')
        await copyDatabases(path);
      else if (entry.isFile() && entry.name.endsWith('.db')) {
        const from = join(prepared, path.slice(dest.length));
        await run('cp', ['--remove-destination', from, path]);
      }
    }
  };
  await copyDatabases(dest);
}
