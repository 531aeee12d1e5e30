// The file system a container sees. There are no images to unpack: a container's root is a tmpfs in its
// own mount namespace holding a bind mount of each entry of this machine's `/`, except a private /tmp,
// a minimal /dev (with /dev/termination-log) and directories that must hold something this machine's
// do not (a mount point that does not exist here): those are tmpfs copies of the directory whose
// entries are bound one by one, so the mount point is created in the copy, never on this machine. For
// a non-root user, a directory it may not enter (a home directory holding the image's programs) is a
// tmpfs holding only the image's paths.

import { existsSync, lstatSync, readdirSync, readlinkSync, statSync } from 'node:fs';
import { dirname, join, posix, relative } from 'node:path';
import { shellQuote } from '../../shell.ts';
import type { SystemTools } from './launch.ts';
import type { BindMount } from './volumes.ts';

/** Whether `uid`/`gid` may enter directory `path` (search permission). */
function canEnter(path: string, uid: number, gid: number): boolean {
  if (uid === 0) return true;
  const st = statSync(path);
  if (st.uid === uid) return (st.mode & 0o100) !== 0;
  if (st.gid === gid) return (st.mode & 0o010) !== 0;
  return (st.mode & 0o001) !== 0;
}

/** Groups exposed paths by the top-most ancestor the user cannot enter. */
export function planExposures(paths: string[], uid: number, gid: number): Map<string, string[]> {
  const plan = new Map<string, string[]>();
  for (const path of [...new Set(paths)].sort()) {
    if (!existsSync(path)) continue;
    let blocked: string | undefined;
    let current = '/';
    for (const part of path.split('/').filter(Boolean)) {
      if (!canEnter(current, uid, gid)) {
        blocked = current;
        break;
      }
      current = join(current, part);
    }
    if (!blocked || blocked === '/') continue;
    const list = plan.get(blocked) ?? [];
    if (!list.some((p) => path.startsWith(`${p}/`))) list.push(path);
    plan.set(blocked, list);
  }
  return plan;
}

const privateRoots = new Set(['/tmp', '/dev']);

function within(path: string, dir: string): boolean {
  return dir === '/' || path === dir || path.startsWith(`${dir}/`);
}

/**
 * Where `target` lands in the container: symlinks of this machine resolved (as the container would
 * resolve them) up to a private directory or an earlier mount point, whose contents differ.
 */
export function resolveTarget(target: string, mounted: string[]): string {
  let resolved = '/';
  const parts = posix.normalize(target).split('/').filter(Boolean);
  for (let i = 0; i < parts.length; i++) {
    const next = posix.join(resolved, parts[i]!);
    const opaque = [...privateRoots, ...mounted].some((m) => within(next, m) && m !== '/');
    if (opaque) return posix.join(next, ...parts.slice(i + 1));
    let st: ReturnType<typeof lstatSync> | undefined;
    try {
      st = lstatSync(next);
    } catch {
      return posix.join(next, ...parts.slice(i + 1));
    }
    if (st.isSymbolicLink()) {
      const link = readlinkSync(next);
      const base = link.startsWith('/') ? link : posix.join(resolved, link);
      return resolveTarget(posix.join(base, ...parts.slice(i + 1)), mounted);
    }
    resolved = next;
  }
  return resolved;
}

/** The deepest ancestor of `path` (or itself) that exists on this machine. */
function existingAncestor(path: string): string {
  let p = path;
  while (p !== '/' && !existsSync(p)) p = dirname(p);
  return p;
}

export interface RootSpec {
  root: string;
  tmp: string;
  mounts: BindMount[];
  exposed: string[];
  uid: number;
  gid: number;
}

/** Devices every container gets, and those passed through when this machine has them. */
const deviceNames = ['null', 'zero', 'full', 'random', 'urandom', 'tty', 'ptmx'];
const passThrough = /^(nvidia.*|infiniband|dri|kfd|fuse)$/;

/** Script lines that build the container's root at `spec.root` and mount its volumes into it. */
export function rootScript(spec: RootSpec, tools: SystemTools): string[] {
  const q = shellQuote;
  const lines: string[] = [];
  const restricted =
    spec.uid === 0 ? new Map<string, string[]>() : planExposures(spec.exposed, spec.uid, spec.gid);
  const expanded = new Set<string>();
  const expand = (dir: string) => {
    for (let d = dir; d !== '/'; d = dirname(d)) expanded.add(d);
  };
  for (const dir of restricted.keys()) expand(dirname(dir));
  const mounted: string[] = [];
  const targets: { mount: BindMount; at: string }[] = [];
  // The image's paths below a private directory (this machine's /tmp) are bound in at the same place.
  const hidden = spec.exposed
    .filter((p) => existsSync(p) && [...privateRoots].some((r) => within(p, r)))
    .map((p) => ({ source: p, target: p, readOnly: true }));
  for (const m of [...hidden, ...spec.mounts]) {
    const at = resolveTarget(m.target, mounted);
    mounted.push(at);
    targets.push({ mount: m, at });
    const opaque = [...privateRoots, ...mounted.slice(0, -1)].some((p) => within(at, p));
    if (opaque || existsSync(at)) continue;
    const anchor = existingAncestor(at);
    if (![...restricted.keys()].some((r) => within(anchor, r))) expand(anchor);
  }
  const R = (p: string) => posix.join(spec.root, p);
  /** One directory level: mount points made with one mkdir and one touch, then the mounts. */
  const level = () => {
    const dirs: string[] = [];
    const files: string[] = [];
    const links: string[] = [];
    const mounts: string[] = [];
    const nested: (() => void)[] = [];
    return {
      dirs,
      nested,
      mounts,
      entry(path: string, at: string) {
        const st = lstatSync(path);
        if (st.isSymbolicLink()) links.push(`${tools.ln} -s ${q(readlinkSync(path))} ${q(at)}`);
        else {
          (st.isDirectory() ? dirs : files).push(q(at));
          mounts.push(`${tools.mount} ${st.isDirectory() ? '--rbind' : '--bind'} ${q(path)} ${q(at)}`);
        }
      },
      link(target: string, at: string) {
        links.push(`${tools.ln} -s ${q(target)} ${q(at)}`);
      },
      emit() {
        if (dirs.length) lines.push(`${tools.mkdir} -p ${dirs.join(' ')}`);
        if (files.length) lines.push(`${tools.touch} ${files.join(' ')}`);
        lines.push(...links, ...mounts);
        for (const n of nested) n();
      },
    };
  };
  const tmpfs = (path: string, at: string, name: string, open = false) => {
    const st = statSync(path);
    const mode = (open ? 0o755 : st.mode & 0o7777).toString(8);
    lines.push(`${tools.mount} -t tmpfs -o mode=${mode},uid=${st.uid},gid=${st.gid} ${name} ${q(at)}`);
  };
  const fill = (dir: string) => {
    const l = level();
    const names = readdirSync(dir).sort();
    if (dir === '/') for (const p of privateRoots) if (!names.includes(p.slice(1))) names.push(p.slice(1));
    for (const name of names) {
      const path = posix.join(dir, name);
      const at = R(path);
      if (path === '/tmp') {
        l.dirs.push(q(at));
        l.mounts.push(`${tools.mount} --bind ${q(spec.tmp)} ${q(at)}`);
      } else if (path === '/dev') {
        l.dirs.push(q(at));
        l.nested.push(() => devices(at));
      } else if (restricted.has(path)) {
        l.dirs.push(q(at));
        l.nested.push(() => {
          tmpfs(path, at, 'kvpool-view', true);
          const inner = level();
          for (const p of restricted.get(path)!) inner.entry(p, posix.join(at, relative(path, p)));
          inner.emit();
        });
      } else if (expanded.has(path) && lstatSync(path).isDirectory()) {
        l.dirs.push(q(at));
        l.nested.push(() => {
          tmpfs(path, at, 'kvpool-view');
          fill(path);
        });
      } else {
        l.entry(path, at);
      }
    }
    l.emit();
  };
  const devices = (at: string) => {
    lines.push(`${tools.mount} -t tmpfs -o mode=755,nosuid kvpool-dev ${q(at)}`);
    const l = level();
    for (const name of readdirSync('/dev').sort()) {
      if (deviceNames.includes(name) || passThrough.test(name)) l.entry(`/dev/${name}`, posix.join(at, name));
    }
    for (const name of ['pts', 'shm', 'mqueue']) {
      if (existsSync(`/dev/${name}`)) l.entry(`/dev/${name}`, posix.join(at, name));
    }
    l.link('/proc/self/fd', posix.join(at, 'fd'));
    for (const [i, name] of ['stdin', 'stdout', 'stderr'].entries()) {
      l.link(`/proc/self/fd/${i}`, posix.join(at, name));
    }
    l.emit();
  };
  lines.push(
    `${tools.mount} -t tmpfs -o mode=755 kvpool-root ${q(spec.root)}`,
    `${tools.mount} --make-unbindable ${q(spec.root)}`,
  );
  fill('/');
  for (const { mount, at } of targets) {
    const target = R(at);
    const isFile = existsSync(mount.source) && !statSync(mount.source).isDirectory();
    if (isFile) {
      lines.push(
        `[ -e ${q(target)} ] || { ${tools.mkdir} -p ${q(dirname(target))}; ${tools.touch} ${q(target)}; }`,
      );
    } else {
      lines.push(`${tools.mkdir} -p ${q(target)}`);
    }
    lines.push(`${tools.mount} --bind ${q(mount.source)} ${q(target)}`);
    if (mount.readOnly) lines.push(`${tools.mount} -o remount,bind,ro ${q(target)}`);
  }
  return lines;
}
