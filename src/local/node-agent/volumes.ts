// A Pod's volumes on this machine: one directory per volume under the Pod's directory (emptyDir,
// configMap, secret, downwardAPI, projected, the default service-account token) or a path below the
// node's directory (hostPath). Containers bind-mount them (see launch.ts).
import { chmodSync, chownSync, existsSync, mkdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, posix, relative } from 'node:path';
import { type EnvSources, expandVars, type PodAddresses } from './env.ts';
import { MountError } from './errors.ts';
import type { Container, Pod, Volume } from './pod-types.ts';
import type { TokenSource } from './service-account-token.ts';
import { downwardFiles, type FileSet, keyFiles, writeFileSet } from './volume-files.ts';

export const serviceAccountMountPath = '/var/run/secrets/kubernetes.io/serviceaccount';
const defaultTokenVolume = 'kube-api-access-local';

export interface BindMount {
  source: string;
  target: string;
  readOnly: boolean;
}

export interface VolumeContext {
  /** This node's directory: a hostPath `/x` is `<nodeRoot>/x`. */
  nodeRoot: string;
  /** The Pod's directory; volumes go to `<podDir>/volumes/<name>`. */
  podDir: string;
  sources: EnvSources;
  tokens: TokenSource;
  /** The cluster CA, for the default service-account volume when the API server injected none. */
  caPem: string;
  allocatable: Record<string, string>;
}

/** Whether the Pod gets a service-account volume the API server's admission did not add. */
function needsDefaultToken(pod: Pod): boolean {
  if (pod.spec.automountServiceAccountToken === false) return false;
  const all = [...(pod.spec.initContainers ?? []), ...pod.spec.containers];
  return !all.some((c) => c.volumeMounts?.some((m) => m.mountPath === serviceAccountMountPath));
}

/** The Pod's volumes, including the default service-account token volume when it needs one. */
export function podVolumes(pod: Pod): Volume[] {
  const volumes = [...(pod.spec.volumes ?? [])];
  if (needsDefaultToken(pod)) {
    volumes.push({
      name: defaultTokenVolume,
      projected: {
        sources: [
          { serviceAccountToken: { path: 'token', expirationSeconds: 3607 } },
          { downwardAPI: { items: [{ path: 'namespace', fieldRef: { fieldPath: 'metadata.namespace' } }] } },
        ],
      },
    });
  }
  return volumes;
}

export class PodVolumes {
  private readonly ctx: VolumeContext;
  private readonly hostPaths = new Map<string, string>();

  constructor(ctx: VolumeContext) {
    this.ctx = ctx;
  }

  /** The directory (or file) on this machine that holds a volume. */
  source(name: string): string {
    return this.hostPaths.get(name) ?? join(this.ctx.podDir, 'volumes', name);
  }

  /**
   * Creates every volume (first call) or brings their contents up to date (later calls); throws
   * MountError naming the volume that cannot be set up.
   */
  async sync(pod: Pod, addresses: PodAddresses): Promise<void> {
    const gid = pod.spec.securityContext?.fsGroup;
    for (const volume of podVolumes(pod)) {
      try {
        await this.syncOne(pod, volume, addresses, gid);
      } catch (err) {
        if (err instanceof MountError) {
          throw new MountError(`MountVolume.SetUp failed for volume "${volume.name}" : ${err.message}`);
        }
        throw err;
      }
    }
  }

  private async syncOne(pod: Pod, volume: Volume, addresses: PodAddresses, gid?: number): Promise<void> {
    const dir = this.source(volume.name);
    const ns = pod.metadata.namespace ?? 'default';
    const { sources } = this.ctx;
    if (volume.hostPath) {
      // Checked once, when the Pod starts, as the kubelet does.
      if (this.hostPaths.has(volume.name)) return;
      this.hostPaths.set(volume.name, this.prepareHostPath(volume.hostPath.path, volume.hostPath.type ?? ''));
    } else if (volume.emptyDir) {
      if (!existsSync(dir)) {
        mkdirSync(dir, { recursive: true });
        chmodSync(dir, 0o777);
      }
    } else if (volume.configMap) {
      const c = volume.configMap;
      const obj = sources.configMap(ns, c.name);
      writeFileSet(dir, keyFiles('ConfigMap', c.name, obj, c.items, c.optional, c.defaultMode ?? 0o644), gid);
    } else if (volume.secret) {
      const s = volume.secret;
      const obj = sources.secret(ns, s.secretName);
      writeFileSet(
        dir,
        keyFiles('Secret', s.secretName, obj, s.items, s.optional, s.defaultMode ?? 0o644),
        gid,
      );
    } else if (volume.downwardAPI) {
      const d = volume.downwardAPI;
      const files = downwardFiles(
        pod,
        d.items ?? [],
        d.defaultMode ?? 0o644,
        addresses,
        this.ctx.allocatable,
      );
      writeFileSet(dir, files, gid);
    } else if (volume.projected) {
      writeFileSet(dir, await this.projectedFiles(pod, volume, addresses), gid);
    } else {
      const kind = Object.keys(volume).find((k) => k !== 'name') ?? 'unknown';
      throw new MountError(`volume type ${kind} is not supported on the local cluster`);
    }
    if (gid !== undefined && !volume.hostPath) {
      const st = statSync(dir);
      if (st.gid !== gid) chownSync(dir, st.uid, gid);
    }
  }

  private async projectedFiles(pod: Pod, volume: Volume, addresses: PodAddresses): Promise<FileSet> {
    const ns = pod.metadata.namespace ?? 'default';
    const mode = volume.projected!.defaultMode ?? 0o644;
    const files: FileSet = new Map();
    const add = (more: FileSet) => {
      for (const [k, v] of more) files.set(k, v);
    };
    for (const source of volume.projected!.sources ?? []) {
      if (source.serviceAccountToken) {
        const t = source.serviceAccountToken;
        const token = await this.ctx.tokens.token(pod, t.audience, t.expirationSeconds ?? 3600);
        files.set(t.path, { data: token, mode });
      } else if (source.configMap) {
        const c = source.configMap;
        add(keyFiles('ConfigMap', c.name, this.ctx.sources.configMap(ns, c.name), c.items, c.optional, mode));
      } else if (source.secret) {
        const s = source.secret;
        add(keyFiles('Secret', s.name, this.ctx.sources.secret(ns, s.name), s.items, s.optional, mode));
      } else if (source.downwardAPI) {
        add(downwardFiles(pod, source.downwardAPI.items ?? [], mode, addresses, this.ctx.allocatable));
      }
    }
    if (volume.name === defaultTokenVolume) files.set('ca.crt', { data: this.ctx.caPem, mode });
    return files;
  }

  /** The node's path on this machine, created or checked by `type` as the kubelet does. */
  private prepareHostPath(nodePath: string, type: string): string {
    // Resolved against the node's `/`, so `..` cannot leave the node's directory.
    const path = join(this.ctx.nodeRoot, posix.resolve('/', nodePath));
    const kind = fileKind(path);
    if (!kind && (type === '' || type === 'DirectoryOrCreate'))
      mkdirSync(path, { recursive: true, mode: 0o755 });
    else if (!kind && type === 'FileOrCreate') {
      mkdirSync(dirname(path), { recursive: true, mode: 0o755 });
      writeFileSync(path, '', { mode: 0o644 });
    } else if (type !== '') {
      const expected = hostPathKinds[type];
      if (!expected) throw new MountError(`hostPath type ${type} is not supported`);
      if (kind !== expected[0]) {
        throw new MountError(
          `hostPath type check failed: ${nodePath} is not ${expected[1]} (node path ${path})`,
        );
      }
    }
    return path;
  }

  /** The container's bind mounts, parents before children. */
  mountsFor(pod: Pod, container: Container, env: Record<string, string>): BindMount[] {
    const mounts: BindMount[] = [];
    const volumes = new Set(podVolumes(pod).map((v) => v.name));
    const requested = [...(container.volumeMounts ?? [])];
    if (volumes.has(defaultTokenVolume)) {
      requested.push({ name: defaultTokenVolume, mountPath: serviceAccountMountPath, readOnly: true });
    }
    for (const m of requested) {
      if (!volumes.has(m.name)) throw new MountError(`volumeMount ${m.mountPath} names no volume ${m.name}`);
      let source = this.source(m.name);
      const sub = m.subPathExpr ? expandVars(m.subPathExpr, (n) => env[n]) : m.subPath;
      if (sub) {
        const full = join(source, sub);
        if (relative(source, full).startsWith('..')) throw new MountError(`subPath ${sub} leaves the volume`);
        if (!existsSync(full)) mkdirSync(full, { recursive: true, mode: 0o777 });
        source = full;
      }
      mounts.push({ source, target: m.mountPath, readOnly: m.readOnly ?? false });
    }
    return mounts.sort((a, b) => depth(a.target) - depth(b.target));
  }

  /** Removes the Pod's volume directories (hostPath data stays). */
  teardown(): void {
    rmSync(join(this.ctx.podDir, 'volumes'), { recursive: true, force: true });
  }
}

/** What a hostPath `type` requires, and how the kubelet's message names it. */
const hostPathKinds: Record<string, [string, string]> = {
  DirectoryOrCreate: ['Directory', 'a directory'],
  Directory: ['Directory', 'a directory'],
  FileOrCreate: ['File', 'a file'],
  File: ['File', 'a file'],
  Socket: ['Socket', 'a socket file'],
  CharDevice: ['CharDevice', 'a character device'],
  BlockDevice: ['BlockDevice', 'a block device'],
};

function fileKind(path: string): string | undefined {
  try {
    const st = statSync(path);
    if (st.isDirectory()) return 'Directory';
    if (st.isFile()) return 'File';
    if (st.isSocket()) return 'Socket';
    if (st.isCharacterDevice()) return 'CharDevice';
    if (st.isBlockDevice()) return 'BlockDevice';
    return 'other';
  } catch {
    return undefined;
  }
}

function depth(path: string): number {
  return path.split('/').filter(Boolean).length;
}
