// The files of configMap, secret, downwardAPI and projected volumes: what they hold (from the objects
// and the Pod), and writing them into a volume directory in place, so containers that bind-mounted the
// directory (or one file of it, through subPath) see every update.
import {
  chmodSync,
  chownSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { type PodAddresses, podFieldValue } from './env.ts';
import { MountError } from './errors.ts';
import type { ConfigMap, DownwardItem, KeyToPath, Pod, Secret } from './pod-types.ts';
import { resourceFieldValue } from './resource-fields.ts';

export interface VolumeFile {
  data: string | Buffer;
  mode: number;
}

export type FileSet = Map<string, VolumeFile>;

/** Files for the keys of a ConfigMap or Secret: every key, or the listed `items`. */
export function keyFiles(
  kind: 'ConfigMap' | 'Secret',
  name: string,
  obj: ConfigMap | Secret | undefined,
  items: KeyToPath[] | undefined,
  optional: boolean | undefined,
  mode: number,
): FileSet {
  const files: FileSet = new Map();
  if (!obj) {
    if (optional) return files;
    throw new MountError(`${kind.toLowerCase()} "${name}" not found`);
  }
  const raw = kind === 'ConfigMap' ? rawConfigMapData(obj as ConfigMap) : rawSecretData(obj as Secret);
  if (!items) {
    for (const [key, data] of raw) files.set(key, { data, mode });
    return files;
  }
  for (const item of items) {
    const data = raw.get(item.key);
    if (data === undefined) {
      if (optional) continue;
      throw new MountError(`${kind.toLowerCase()} references non-existent config key: ${item.key}`);
    }
    files.set(item.path, { data, mode: item.mode ?? mode });
  }
  return files;
}

function rawConfigMapData(cm: ConfigMap): Map<string, string | Buffer> {
  const out = new Map<string, string | Buffer>();
  for (const [k, v] of Object.entries(cm.binaryData ?? {})) out.set(k, Buffer.from(v, 'base64'));
  for (const [k, v] of Object.entries(cm.data ?? {})) out.set(k, v);
  return out;
}

function rawSecretData(secret: Secret): Map<string, string | Buffer> {
  return new Map(Object.entries(secret.data ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64')]));
}

/** Files of a downwardAPI volume (or projection). */
export function downwardFiles(
  pod: Pod,
  items: DownwardItem[],
  mode: number,
  addresses: PodAddresses,
  allocatable: Record<string, string>,
): FileSet {
  const files: FileSet = new Map();
  for (const item of items) {
    let data = '';
    if (item.fieldRef) data = podFieldValue(pod, item.fieldRef, addresses);
    else if (item.resourceFieldRef) {
      const container = pod.spec.containers.find((c) => c.name === item.resourceFieldRef!.containerName);
      if (!container) throw new MountError(`resourceFieldRef of ${item.path} names no container of the Pod`);
      data = resourceFieldValue(pod, container, item.resourceFieldRef, allocatable);
    }
    files.set(item.path, { data, mode: item.mode ?? mode });
  }
  return files;
}

/** Refuses item paths that would leave the volume (absolute, or with `..`). */
function safePath(dir: string, path: string): string {
  const full = join(dir, path);
  const rel = relative(dir, full);
  if (path.startsWith('/') || rel.startsWith('..') || rel === '') {
    throw new MountError(
      `volume item path ${JSON.stringify(path)} must be relative and stay inside the volume`,
    );
  }
  return full;
}

function listFiles(dir: string, base = dir): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const full = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...listFiles(full, base));
    else out.push(relative(base, full));
  }
  return out;
}

/**
 * Makes `dir` hold exactly `files`: changed files are rewritten in place (same inode), new ones created,
 * others removed. `gid` (the Pod's fsGroup) becomes the files' group. Returns whether anything changed.
 */
export function writeFileSet(dir: string, files: FileSet, gid?: number): boolean {
  mkdirSync(dir, { recursive: true, mode: 0o755 });
  let changed = false;
  for (const [path, file] of files) {
    const full = safePath(dir, path);
    mkdirSync(dirname(full), { recursive: true, mode: 0o755 });
    const data = typeof file.data === 'string' ? Buffer.from(file.data) : file.data;
    let same = false;
    try {
      same = readFileSync(full).equals(data);
    } catch {
      // Not there yet.
    }
    if (!same) {
      writeFileSync(full, data);
      changed = true;
    }
    const mode = file.mode & 0o7777;
    const st = statSync(full);
    if ((st.mode & 0o7777) !== mode) chmodSync(full, mode);
    if (gid !== undefined && st.gid !== gid) chownSync(full, st.uid, gid);
  }
  for (const existing of listFiles(dir)) {
    if (!files.has(existing)) {
      rmSync(join(dir, existing), { force: true });
      changed = true;
    }
  }
  return changed;
}
