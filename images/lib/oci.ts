// Writes OCI image archives without a container engine: each layer is a gzip'd tar of a directory,
// and the archive is an OCI image layout (oci-layout, index.json, blobs/) that also carries Docker's
// manifest.json, so `ctr images import`, `docker load` and `skopeo copy oci-archive:` all read it.
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  createWriteStream,
  mkdirSync,
  readdirSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { createGzip } from 'node:zlib';
import { run } from './run.ts';

export interface Blob {
  mediaType: string;
  digest: string;
  size: number;
}

export interface Layer extends Blob {
  /** sha256 of the uncompressed tar, as the image config's rootfs lists it. */
  diffId: string;
  /** The compressed tar on disk. */
  path: string;
}

export interface ImageConfig {
  user?: string;
  env?: string[];
  entrypoint?: string[];
  cmd?: string[];
  workingDir?: string;
  labels?: Record<string, string>;
}

export interface ImageSpec {
  /** Full references, e.g. docker.io/kvpool/kvpool-store:0.1.0; the first is the image's own name. */
  references: string[];
  layers: Layer[];
  config: ImageConfig;
}

const layerMediaType = 'application/vnd.oci.image.layer.v1.tar+gzip';

/** Packs `dir` (a layer's contents, whiteouts already in OCI form) into a gzip'd tar at `out`. */
export async function writeLayer(dir: string, out: string): Promise<Layer> {
  mkdirSync(dirname(out), { recursive: true });
  const entries = readdirSync(dir).sort();
  const tar = spawn(
    'tar',
    [
      '--sort=name',
      '--numeric-owner',
      '--format=posix',
      '--pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime',
      '-C',
      dir,
      '-cf',
      '-',
      '--',
      ...entries,
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let stderr = '';
  tar.stderr.on('data', (d) => {
    stderr += d;
  });
  const exited = new Promise<number>((resolve) => tar.on('close', (code) => resolve(code ?? 1)));
  const diff = createHash('sha256');
  const compressed = createHash('sha256');
  let size = 0;
  const gzip = createGzip({ level: 6 });
  tar.stdout.on('data', (chunk: Buffer) => diff.update(chunk));
  gzip.on('data', (chunk: Buffer) => {
    compressed.update(chunk);
    size += chunk.length;
  });
  const partial = `${out}.partial`;
  await pipeline(tar.stdout, gzip, createWriteStream(partial));
  const code = await exited;
  if (code !== 0) throw new Error(`tar of ${dir} failed (exit ${code}): ${stderr.trim()}`);
  renameSync(partial, out);
  return {
    mediaType: layerMediaType,
    digest: `sha256:${compressed.digest('hex')}`,
    diffId: `sha256:${diff.digest('hex')}`,
    size,
    path: out,
  };
}

/** The image config document (the OCI image spec's "application/vnd.oci.image.config.v1+json"). */
export function imageConfigDocument(spec: ImageSpec): object {
  const c = spec.config;
  return {
    architecture: 'amd64',
    os: 'linux',
    config: {
      ...(c.user ? { User: c.user } : {}),
      Env: c.env ?? ['PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'],
      ...(c.entrypoint ? { Entrypoint: c.entrypoint } : {}),
      ...(c.cmd ? { Cmd: c.cmd } : {}),
      ...(c.workingDir ? { WorkingDir: c.workingDir } : {}),
      ...(c.labels ? { Labels: c.labels } : {}),
    },
    rootfs: { type: 'layers', diff_ids: spec.layers.map((l) => l.diffId) },
  };
}

function json(value: object): Buffer {
  return Buffer.from(JSON.stringify(value));
}

function blobOf(mediaType: string, data: Buffer): Blob & { data: Buffer } {
  return {
    mediaType,
    digest: `sha256:${createHash('sha256').update(data).digest('hex')}`,
    size: data.length,
    data,
  };
}

/** `docker.io/kvpool/x:1` → `kvpool/x:1`, the short form Docker's manifest.json lists. */
export function dockerRepoTag(reference: string): string {
  return reference.replace(/^docker\.io\/(library\/)?/, '');
}

/** Writes the image as an OCI archive (a plain tar of the layout) at `out`; returns its size in bytes. */
export async function writeImageArchive(spec: ImageSpec, out: string): Promise<number> {
  const layout = `${out}.layout`;
  rmSync(layout, { recursive: true, force: true });
  const blobs = join(layout, 'blobs', 'sha256');
  mkdirSync(blobs, { recursive: true });
  const config = blobOf('application/vnd.oci.image.config.v1+json', json(imageConfigDocument(spec)));
  const manifest = blobOf(
    'application/vnd.oci.image.manifest.v1+json',
    json({
      schemaVersion: 2,
      mediaType: 'application/vnd.oci.image.manifest.v1+json',
      config: { mediaType: config.mediaType, digest: config.digest, size: config.size },
      layers: spec.layers.map(({ mediaType, digest, size }) => ({ mediaType, digest, size })),
    }),
  );
  const hex = (d: string) => d.slice('sha256:'.length);
  for (const b of [config, manifest]) writeFileSync(join(blobs, hex(b.digest)), b.data);
  for (const l of spec.layers) {
    await run('ln', ['-f', l.path, join(blobs, hex(l.digest))]).catch(() =>
      run('cp', [l.path, join(blobs, hex(l.digest))]),
    );
  }
  writeFileSync(join(layout, 'oci-layout'), json({ imageLayoutVersion: '1.0.0' }));
  writeFileSync(
    join(layout, 'index.json'),
    json({
      schemaVersion: 2,
      mediaType: 'application/vnd.oci.image.index.v1+json',
      manifests: spec.references.map((ref) => ({
        mediaType: manifest.mediaType,
        digest: manifest.digest,
        size: manifest.size,
        annotations: {
          'io.containerd.image.name': ref,
          'org.opencontainers.image.ref.name': ref.slice(ref.lastIndexOf(':') + 1),
        },
      })),
    }),
  );
  writeFileSync(
    join(layout, 'manifest.json'),
    json([
      {
        Config: `blobs/sha256/${hex(config.digest)}`,
        RepoTags: spec.references.map(dockerRepoTag),
        Layers: spec.layers.map((l) => `blobs/sha256/${hex(l.digest)}`),
      },
    ]),
  );
  const partial = `${out}.partial`;
  await run('tar', [
    '--numeric-owner',
    '-C',
    layout,
    '-cf',
    partial,
    'oci-layout',
    'index.json',
    'manifest.json',
    'blobs',
  ]);
  renameSync(partial, out);
  rmSync(layout, { recursive: true, force: true });
  return statSync(out).size;
}
