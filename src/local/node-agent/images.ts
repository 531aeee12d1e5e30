// The images the local cluster can run. There is no container runtime here: an "image" is a user to
// run as, a PATH into programs on this machine, and a few defaults. Pods name images as usual; any tag
// or digest of a known repository runs the same programs.
import { createHash } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { mooncakeVenv, projectRoot } from '../toolchain.ts';

export interface ImageSpec {
  /** The user the image runs as unless the Pod's securityContext says otherwise. */
  user: { uid: number; gid: number };
  /** PATH entries, in order. */
  path: string[];
  env?: Record<string, string>;
  /** ENTRYPOINT and CMD, used when the container names no command or args. */
  command?: string[];
  args?: string[];
  workingDir?: string;
  /**
   * Directories on this machine the image's programs read; when one sits below a directory the image's
   * user may not enter (such as a home directory), containers get a view of it they can enter.
   */
  hostPaths?: string[];
}

export interface ResolvedImage {
  repository: string;
  spec: ImageSpec;
  /** A stable image ID for container statuses. */
  imageID: string;
}

export const storeImageRepository = 'kvpool/kvpool-store';
export const shellImageRepository = 'kvpool.local/shell';

/** The repository of an image reference: without tag, digest and a `docker.io/` prefix. */
export function repositoryOf(image: string): string {
  let rest = image.split('@')[0]!;
  const colon = rest.lastIndexOf(':');
  if (colon > rest.lastIndexOf('/')) rest = rest.slice(0, colon);
  return rest.replace(/^(?:index\.)?docker\.io\//, '');
}

export class ImageCatalog {
  private readonly images = new Map<string, ImageSpec>();

  /** Adds (or replaces) the programs an image repository runs. */
  add(repository: string, spec: ImageSpec): this {
    this.images.set(repositoryOf(repository), spec);
    return this;
  }

  resolve(image: string): ResolvedImage | undefined {
    const repository = repositoryOf(image);
    const spec = this.images.get(repository);
    if (!spec) return undefined;
    const digest = image.includes('@')
      ? image.split('@')[1]!
      : `sha256:${createHash('sha256').update(repository).digest('hex')}`;
    return { repository, spec, imageID: `${repository}@${digest}` };
  }

  repositories(): string[] {
    return [...this.images.keys()].sort();
  }

  /** The ErrImagePull message for an image the catalog does not hold. */
  missingMessage(image: string): string {
    return `image ${image} is not available on the local cluster (it runs: ${this.repositories().join(', ')})`;
  }
}

/** The Python installation a virtual environment's interpreter comes from (its pyvenv.cfg `home`). */
function venvBaseInstallation(venv: string): string | undefined {
  const cfg = join(venv, 'pyvenv.cfg');
  if (!existsSync(cfg)) return undefined;
  const home = /^home\s*=\s*(.+)$/m.exec(readFileSync(cfg, 'utf8'))?.[1]?.trim();
  return home ? dirname(home) : undefined;
}

/**
 * The catalog of the local cluster: the project's store image (`kvpool-store` from this checkout plus
 * the Mooncake wheel's programs, as uid 65532 gid 0) and `kvpool.local/shell` (the machine's /usr/bin
 * and /bin, as root) for tests. Callers add engine images.
 */
export function defaultImageCatalog(options: { root: string }): ImageCatalog {
  const bin = join(options.root, 'images', 'kvpool-store', 'bin');
  mkdirSync(bin, { recursive: true });
  const wrapper = join(bin, 'kvpool-store');
  const script = `#!/bin/sh\nexec ${process.execPath} ${join(projectRoot, 'src/cli/kvpool-store.ts')} "$@"\n`;
  writeFileSync(wrapper, script);
  chmodSync(wrapper, 0o755);
  const venv = mooncakeVenv();
  const python = venvBaseInstallation(venv);
  return new ImageCatalog()
    .add(storeImageRepository, {
      user: { uid: 65532, gid: 0 },
      path: [bin, join(venv, 'bin'), '/usr/local/bin', '/usr/bin', '/bin'],
      workingDir: '/',
      hostPaths: [bin, projectRoot, dirname(dirname(process.execPath)), venv, ...(python ? [python] : [])],
    })
    .add(shellImageRepository, {
      user: { uid: 0, gid: 0 },
      path: ['/usr/bin', '/bin'],
      args: ['sh'],
      workingDir: '/',
    });
}
