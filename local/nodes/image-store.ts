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

/** How many prepared stores the cache keeps (about 1 GiB each), the most recently used. */
const keptStores = 6;

function pruneStores(base: string, keep: number): void {
  const stores = readdirSync(base)
    .map((name) => join(base, name, '.complete'))
    .filter((f) => existsSync(f))
    .sort((a, b) => statSync(b).mtimeMs - statSync(a).mtimeMs);
  for (const f of stores.slice(keep)) rmSync(join(f, '..'), { recursive: true, force: true });
}

/** A containerd root holding `archives` imported (namespace k8s.io) and unpacked; made once. */
export async function preparedImageStore(archives: string[]): Promise<string> {
  const key = createHash('sha256')
    .update([toolchainValue('CONTAINERD_VERSION'), ...archives].join('\n'))
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
    pruneStores(base, keptStores - 1);
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir, { recursive: true });
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
    writeFileSync(join(dir, '.complete'), '');
    return join(dir, 'root');
  });
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
