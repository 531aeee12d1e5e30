// How a container process starts: `unshare` gives it its own mount and UTS namespaces; a generated
// script sets the hostname, builds its root (see rootfs.ts) with the volumes bind-mounted into it,
// then `chroot`s there and `setpriv` drops to the container's user and execs the command. Exec probes
// and hooks enter the same namespaces and root through `nsenter`.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { shellQuote } from '../../shell.ts';
import { rootScript } from './rootfs.ts';
import type { BindMount } from './volumes.ts';

export interface LaunchSpec {
  hostname: string;
  mounts: BindMount[];
  /** Directories the process must be able to enter (the image's hostPaths). */
  exposed: string[];
  uid: number;
  gid: number;
  groups: number[];
  workingDir: string;
  argv: string[];
  /** An empty directory that becomes the container's root inside its namespace. */
  root: string;
  /** The container's private /tmp. */
  tmp: string;
  /** Created just before the command is executed: the launch itself succeeded. */
  launchedMarker: string;
}

export interface SystemTools {
  unshare: string;
  nsenter: string;
  setpriv: string;
  mount: string;
  mkdir: string;
  touch: string;
  ln: string;
  chroot: string;
  env: string;
  sh: string;
  ip: string;
}

/** Finds the util-linux, coreutils, iproute2 and shell programs the launcher runs, by absolute path. */
export function findSystemTools(): SystemTools {
  const dirs = ['/usr/bin', '/bin', '/usr/sbin', '/sbin'];
  const find = (name: string) => {
    const dir = dirs.find((d) => existsSync(join(d, name)));
    if (!dir) {
      throw new Error(
        `${name} is not installed (looked in ${dirs.join(', ')}); install util-linux and iproute2`,
      );
    }
    return join(dir, name);
  };
  return {
    unshare: find('unshare'),
    nsenter: find('nsenter'),
    setpriv: find('setpriv'),
    mount: find('mount'),
    mkdir: find('mkdir'),
    touch: find('touch'),
    ln: find('ln'),
    chroot: find('chroot'),
    env: find('env'),
    sh: find('sh'),
    ip: find('ip'),
  };
}

function privilegeArgs(spec: Pick<LaunchSpec, 'uid' | 'gid' | 'groups'>): string[] {
  const groups = spec.groups.length ? `--groups=${spec.groups.join(',')}` : '--clear-groups';
  return [`--reuid=${spec.uid}`, `--regid=${spec.gid}`, groups];
}

/** The launch script run by `sh` inside the new namespaces. */
export function launchScript(spec: LaunchSpec, tools: SystemTools): string {
  const q = shellQuote;
  const lines = [
    'set -e',
    `echo ${q(spec.hostname)} > /proc/sys/kernel/hostname`,
    ...rootScript(spec, tools),
    `: > ${q(spec.launchedMarker)}`,
    `exec ${tools.chroot} ${q(spec.root)} ${tools.env} --chdir=${q(spec.workingDir)} ${tools.setpriv} ${privilegeArgs(spec).join(' ')} -- ${spec.argv.map(q).join(' ')}`,
  ];
  return `${lines.join('\n')}\n`;
}

/** The argv that runs `argv` as the container's user inside the namespaces and root of process `pid`. */
export function execInContainerArgv(
  pid: number,
  spec: Pick<LaunchSpec, 'uid' | 'gid' | 'groups'>,
  argv: string[],
  tools: SystemTools,
): string[] {
  return [
    tools.nsenter,
    `--target=${pid}`,
    '--mount',
    '--uts',
    '--root',
    '--wd',
    '--',
    tools.setpriv,
    ...privilegeArgs(spec),
    '--',
    ...argv,
  ];
}
