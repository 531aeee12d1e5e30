// Builds the project's images (images/recipes.ts) as OCI archives in the cache, each layer and each
// archive keyed by a hash of what it is made from, so an unchanged image is never rebuilt.
// Usage: node images/build.ts [image ...] [--out DIR] [--record]   (--out puts each archive in DIR as
// <image>.oci.tar; --record writes the sizes to bench/results/images.json). It prints each archive's path.
import { createHash } from 'node:crypto';
import {
  copyFileSync,
  existsSync,
  linkSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { compileProduct, compilerVersions } from './compiled-source.ts';
import { withLock } from './file-lock.ts';
import { type Layer as BuiltLayer, writeImageArchive, writeLayer } from './lib/oci.ts';
import { run } from './lib/run.ts';
import { chrootStage, debootstrap } from './lib/stage.ts';
import { type FileCopy, type Image, images, type Layer, layerNamed } from './recipes.ts';
import { cacheDir, projectRoot, toolchainValue } from './toolchain.ts';

const debianMirror = process.env.KVPOOL_DEBIAN_MIRROR ?? 'http://deb.debian.org/debian';
const imagesDir = () => join(cacheDir(), 'images');
const skipped = new Set(['__pycache__', '.pytest_cache']);
/** Part of every layer archive's name: bumped when the way layers are packed changes. */
const packingVersion = 2;

export interface BuiltImage {
  name: string;
  references: string[];
  archive: string;
  /** The archive's size in bytes (compressed layers). */
  size: number;
  /** The layers' uncompressed size in bytes. */
  unpacked: number;
  /** Its layers by recipe name, with their digests. */
  layers: { name: string; digest: string }[];
}

/** Marks cached files as just used, so pruning keeps what builds still use. */
function touch(...paths: string[]): void {
  const now = new Date();
  for (const p of paths) if (existsSync(p)) utimesSync(p, now, now);
}

function sha256(...parts: (string | Buffer)[]): string {
  const h = createHash('sha256');
  for (const p of parts) h.update(p).update('\0');
  return h.digest('hex');
}

/** A hash of a file or directory tree: names, modes, link targets and contents. */
function treeHash(path: string): string {
  const st = lstatSync(path);
  if (st.isSymbolicLink()) return sha256('link', readlinkSync(path));
  if (st.isFile()) return sha256('file', String(st.mode & 0o777), readFileSync(path));
  const entries = readdirSync(path)
    .filter((e) => !skipped.has(e))
    .sort();
  return sha256('dir', ...entries.map((e) => `${e}:${treeHash(join(path, e))}`));
}

/** Built inputs that are not files of the checkout: where they are, and what identifies them. */
function builtInput(from: string): { path: string; key: string } {
  switch (from) {
    case '@production-node-modules': {
      const key = treeHash(join(projectRoot, 'package-lock.json'));
      return { path: join(imagesDir(), 'node-modules', key.slice(0, 16)), key };
    }
    case '@compiled-src': {
      // The compiler's and the bundler's versions are part of what the output is made from.
      const key = sha256(treeHash(join(projectRoot, 'src')), compilerVersions);
      return { path: join(imagesDir(), 'compiled-src', key.slice(0, 16)), key };
    }
    case '@pause': {
      // Keyed as scripts/build-node.sh keys it: the source's sha256.
      const key = createHash('sha256')
        .update(readFileSync(join(projectRoot, 'images/pause/pause.go')))
        .digest('hex');
      return { path: join(cacheDir(), 'pause', key.slice(0, 16), 'pause'), key };
    }
    case '@etcd': {
      const v = toolchainValue('ETCD_VERSION');
      return { path: join(cacheDir(), 'etcd', v, 'etcd'), key: v };
    }
    case '@coredns': {
      const v = toolchainValue('COREDNS_VERSION');
      return { path: join(cacheDir(), 'coredns', v, 'coredns'), key: v };
    }
    default:
      return { path: join(projectRoot, from), key: treeHash(join(projectRoot, from)) };
  }
}

const layerKeys = new Map<string, string>();

function layerKey(layer: Layer): string {
  const known = layerKeys.get(layer.name);
  if (known) return known;
  const r = layer.recipe;
  const inputs =
    r.kind === 'files'
      ? r.files.map((f) => ('symlink' in f ? `link:${f.symlink}` : `${f.to}:${builtInput(f.from).key}`))
      : r.kind === 'debootstrap'
        ? [debianMirror]
        : [];
  const key = sha256(
    JSON.stringify(r),
    ...layer.parents.map((p) => layerKey(layerNamed(p))),
    ...inputs,
  ).slice(0, 16);
  layerKeys.set(layer.name, key);
  return key;
}

/** The directory holding a chroot-built layer's files (kept: layers above are built on it). */
const rootDir = (layer: Layer) => join(imagesDir(), 'roots', `${layer.name}-${layerKey(layer)}`);

async function ensureProductionNodeModules(dest: string): Promise<void> {
  if (existsSync(join(dest, '.complete'))) return;
  rmSync(dest, { recursive: true, force: true });
  mkdirSync(dest, { recursive: true });
  for (const f of ['package.json', 'package-lock.json'])
    writeFileSync(join(dest, f), readFileSync(join(projectRoot, f)));
  console.error('[images] installing production node_modules (npm ci --omit=dev)');
  await run('npm', ['ci', '--omit=dev', '--ignore-scripts', '--no-audit', '--no-fund', '--loglevel=error'], {
    cwd: dest,
  });
  writeFileSync(join(dest, '.complete'), '');
}

function ensureCompiledSource(dest: string): void {
  if (existsSync(join(dest, '.complete'))) return;
  rmSync(dest, { recursive: true, force: true });
  console.error('[images] compiling src/ to JavaScript');
  compileProduct(join(projectRoot, 'src'), dest);
  writeFileSync(join(dest, '.complete'), '');
}

async function copyInto(root: string, copy: FileCopy): Promise<void> {
  const dest = join(root, copy.to);
  mkdirSync(join(dest, '..'), { recursive: true });
  if ('symlink' in copy) {
    await run('ln', ['-s', copy.symlink, dest]);
    return;
  }
  const source = builtInput(copy.from);
  if (copy.from === '@production-node-modules') await ensureProductionNodeModules(source.path);
  if (copy.from === '@compiled-src') ensureCompiledSource(source.path);
  const from = copy.from === '@production-node-modules' ? join(source.path, 'node_modules') : source.path;
  if (!existsSync(from))
    throw new Error(`image input ${copy.from} is missing at ${from}: run \`npm run setup\``);
  if (copy.strip) await run('strip', ['--strip-debug', '-o', dest, from]);
  else await run('cp', ['-a', '--no-preserve=ownership', from, dest]);
  await run('find', [
    dest,
    '(',
    '-name',
    '__pycache__',
    '-o',
    '-name',
    '.pytest_cache',
    ')',
    '-prune',
    '-exec',
    'rm',
    '-rf',
    '{}',
    '+',
  ]);
  if (copy.mode !== undefined) await run('chmod', [copy.mode.toString(8), dest]);
}

async function buildLayer(layer: Layer): Promise<BuiltLayer> {
  const key = layerKey(layer);
  const out = join(imagesDir(), 'layers', `${layer.name}-${key}-p${packingVersion}.tar.gz`);
  const meta = `${out}.json`;
  if (existsSync(meta)) {
    touch(out, meta, `${out}.unpacked`);
    return JSON.parse(readFileSync(meta, 'utf8')) as BuiltLayer;
  }
  const started = Date.now();
  console.error(`[images] building layer ${layer.name} (${key})`);
  const work = join(cacheDir(), 'tmp', `layer-${layer.name}-${key}`);
  rmSync(work, { recursive: true, force: true });
  mkdirSync(work, { recursive: true });
  try {
    const r = layer.recipe;
    let dir: string;
    if (r.kind === 'files') {
      dir = join(work, 'root');
      mkdirSync(dir);
      for (const copy of r.files) await copyInto(dir, copy);
    } else {
      dir = rootDir(layer);
      if (!existsSync(join(dir, '..', `${layer.name}-${key}.complete`))) {
        if (r.kind === 'debootstrap') {
          await debootstrap(dir, r.suite, debianMirror, r.include);
          await run('sh', [
            '-c',
            `rm -rf "${dir}"/var/lib/apt/lists/* "${dir}"/var/cache/apt/*.bin "${dir}"/var/cache/apt/archives/*.deb "${dir}"/var/log/* "${dir}"/usr/share/doc "${dir}"/usr/share/man`,
          ]);
        } else {
          for (const p of layer.parents) await buildLayer(layerNamed(p));
          await chrootStage(
            work,
            layer.parents.map((p) => rootDir(layerNamed(p))),
            dir,
            r.script,
          );
        }
        writeFileSync(join(dir, '..', `${layer.name}-${key}.complete`), '');
      }
    }
    const built = await writeLayer(dir, out);
    writeFileSync(meta, JSON.stringify(built));
    console.error(
      `[images] layer ${layer.name}: ${mib(built.size)} compressed, ${((Date.now() - started) / 1000).toFixed(0)} s`,
    );
    return built;
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

async function buildImage(image: Image): Promise<BuiltImage> {
  const built: BuiltLayer[] = [];
  for (const name of image.layers) built.push(await buildLayer(layerNamed(name)));
  const spec = {
    references: image.references,
    layers: built,
    config: {
      user: image.user,
      env: image.env,
      entrypoint: image.entrypoint,
      workingDir: image.workingDir,
      labels: {
        'org.opencontainers.image.title': image.name,
        'org.opencontainers.image.description': image.description,
      },
    },
  };
  const key = sha256(JSON.stringify(spec)).slice(0, 16);
  const archive = join(imagesDir(), `${image.name}-${key}.oci.tar`);
  const unpacked = await unpackedSize(built);
  if (!existsSync(archive)) await writeImageArchive(spec, archive);
  else touch(archive);
  const layers = image.layers.map((name, i) => ({ name, digest: built[i]!.digest }));
  return {
    name: image.name,
    references: image.references,
    archive,
    size: lstatSync(archive).size,
    unpacked,
    layers,
  };
}

async function unpackedSize(layers: BuiltLayer[]): Promise<number> {
  let total = 0;
  for (const l of layers) {
    const metaPath = `${l.path}.unpacked`;
    if (!existsSync(metaPath)) {
      const out = await run('sh', ['-c', `gzip -dc "${l.path}" | wc -c`]);
      writeFileSync(metaPath, out.trim());
    }
    total += Number(readFileSync(metaPath, 'utf8'));
  }
  return total;
}

/** Builds every image (or those named) that is not built yet; returns them. */
export async function buildImages(names: string[] = []): Promise<BuiltImage[]> {
  if (process.getuid?.() !== 0)
    throw new Error('building images needs root (debootstrap, chroot, overlay mounts)');
  const unknown = names.filter((n) => !images.some((i) => i.name === n));
  if (unknown.length)
    throw new Error(`no image named ${unknown.join(', ')} (images: ${images.map((i) => i.name).join(', ')})`);
  mkdirSync(imagesDir(), { recursive: true });
  // Builds started at once (test files) take turns.
  return withLock(join(imagesDir(), '.build-lock'), async () => {
    const out = [];
    for (const image of images)
      if (!names.length || names.includes(image.name)) out.push(await buildImage(image));
    pruneOldBuilds();
    return out;
  });
}

/** How many builds of each image (and of each layer) the cache keeps: the most recently used. */
const keptBuilds = 8;

/** Removes all but the most recently used few archives of each image and builds of each layer. */
function pruneOldBuilds(): void {
  const prune = (dir: string, groupOf: (file: string) => string | undefined) => {
    if (!existsSync(dir)) return;
    const groups = new Map<string, { path: string; mtime: number }[]>();
    for (const file of readdirSync(dir)) {
      const group = groupOf(file);
      if (!group) continue;
      const path = join(dir, file);
      groups.set(group, [...(groups.get(group) ?? []), { path, mtime: lstatSync(path).mtimeMs }]);
    }
    for (const files of groups.values()) {
      for (const f of files.sort((a, b) => b.mtime - a.mtime).slice(keptBuilds))
        rmSync(f.path, { force: true });
    }
  };
  prune(imagesDir(), (f) => /^(.+)-[0-9a-f]{16}\.oci\.tar$/.exec(f)?.[1]);
  prune(join(imagesDir(), 'layers'), (f) =>
    /^.+-[0-9a-f]{16}-p\d+\.tar\.gz/.test(f) ? f.replace(/-[0-9a-f]{16}-/, '-') : undefined,
  );
}

/**
 * Puts each built archive in `dir` as `<image>.oci.tar` (a hard link when the cache is on the same
 * file system, else a copy), the names docs/install.md pushes from; returns the paths.
 */
export function exportArchives(built: BuiltImage[], dir: string): string[] {
  mkdirSync(dir, { recursive: true });
  return built.map((b) => {
    const dest = join(dir, `${b.name}.oci.tar`);
    rmSync(dest, { force: true });
    try {
      linkSync(b.archive, dest);
    } catch {
      copyFileSync(b.archive, dest);
    }
    return dest;
  });
}

const mib = (bytes: number) => `${(bytes / 2 ** 20).toFixed(1)} MiB`;

if (import.meta.main) {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: { record: { type: 'boolean' }, out: { type: 'string' } },
  });
  const built = await buildImages(positionals);
  console.log('image            size (archive)  unpacked    references');
  for (const b of built) {
    console.log(
      `${b.name.padEnd(16)} ${mib(b.size).padStart(14)}  ${mib(b.unpacked).padStart(10)}  ${b.references.join(' ')}`,
    );
  }
  for (const b of built) console.log(`${b.name} archive: ${b.archive}`);
  if (values.out) {
    for (const path of exportArchives(built, values.out)) console.log(`wrote ${path}`);
  }
  if (values.record) {
    const record = built.map(({ name, references, size, unpacked }) => ({
      name,
      references,
      archiveBytes: size,
      unpackedBytes: unpacked,
    }));
    writeFileSync(
      join(projectRoot, 'bench/results/images.json'),
      `${JSON.stringify({ images: record }, null, 2)}\n`,
    );
  }
}
