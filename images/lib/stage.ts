// Builds one layer's directory. A Debian root comes from debootstrap; a layer on top of others is made
// by running a script chrooted in an overlay of them, whose upper directory is then exactly the layer
// (its whiteouts converted to OCI's form). Both run in a mount namespace of their own, so no mount
// outlives the build, even when it is interrupted.
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { run } from './run.ts';

/** The CA bundle pip and apt may need to reach their registries; bound in during the build only. */
const hostCaBundle = '/etc/ssl/certs/ca-certificates.crt';

export async function debootstrap(
  dir: string,
  suite: string,
  mirror: string,
  include: string[],
): Promise<void> {
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  await run(
    'unshare',
    [
      '--mount',
      '--propagation',
      'private',
      '--',
      'debootstrap',
      '--variant=minbase',
      `--include=${include.join(',')}`,
      suite,
      dir,
      mirror,
    ],
    { stream: true },
  );
}

/**
 * Runs `script` with /bin/sh inside the root made of `lowers` (bottom first) and writes what it
 * changed into `upper`.
 */
export async function chrootStage(
  work: string,
  lowers: string[],
  upper: string,
  script: string,
): Promise<void> {
  const merged = join(work, 'merged');
  const overlayWork = join(work, 'overlay-work');
  rmSync(upper, { recursive: true, force: true });
  for (const d of [merged, overlayWork, upper]) mkdirSync(d, { recursive: true });
  const lowerdir = [...lowers].reverse().join(':');
  const setup = [
    'set -eu',
    `mount -t overlay overlay -o "lowerdir=${lowerdir},upperdir=${upper},workdir=${overlayWork}" "${merged}"`,
    `mount -t proc proc "${merged}/proc"`,
    `mount --rbind /dev "${merged}/dev"`,
    `mount -t tmpfs tmpfs "${merged}/tmp"`,
    `touch "${merged}/tmp/ca.crt" && mount --bind ${hostCaBundle} "${merged}/tmp/ca.crt"`,
    `cp /etc/resolv.conf "${merged}/tmp/resolv.conf"`,
    `mount --bind "${merged}/tmp/resolv.conf" "${merged}/etc/resolv.conf"`,
    `exec chroot "${merged}" /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root DEBIAN_FRONTEND=noninteractive PIP_CERT=/tmp/ca.crt SSL_CERT_FILE=/tmp/ca.crt /bin/sh -euc "$1"`,
  ].join('\n');
  await run('unshare', ['--mount', '--propagation', 'private', '--', 'sh', '-euc', setup, 'stage', script], {
    stream: true,
  });
  rmSync(merged, { recursive: true, force: true });
  rmSync(overlayWork, { recursive: true, force: true });
  await toOciWhiteouts(upper);
}

// overlayfs marks a deleted entry with a 0/0 character device and a replaced directory with the
// trusted.overlay.opaque xattr; OCI layers say the same with .wh.<name> and .wh..wh..opq files.
const whiteoutScript = `
import os, stat, sys
root = sys.argv[1]
for dirpath, dirnames, filenames in os.walk(root):
    try:
        if os.getxattr(dirpath, 'trusted.overlay.opaque') == b'y':
            open(os.path.join(dirpath, '.wh..wh..opq'), 'w').close()
            os.removexattr(dirpath, 'trusted.overlay.opaque')
    except OSError:
        pass
    for name in dirnames + filenames:
        path = os.path.join(dirpath, name)
        st = os.lstat(path)
        if stat.S_ISCHR(st.st_mode) and st.st_rdev == 0:
            os.remove(path)
            open(os.path.join(dirpath, '.wh.' + name), 'w').close()
`;

async function toOciWhiteouts(upper: string): Promise<void> {
  await run('python3', ['-c', whiteoutScript, upper]);
}
