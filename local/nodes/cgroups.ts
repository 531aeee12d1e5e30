// A local node's cgroup: every process of the node (its containerd, kubelet, kube-proxy, the shims and
// the Pods' containers) lives under /kvpool/<slot>/<node>, so stopping the node can find and kill all
// of them, and removing the cgroup leaves nothing behind. Works on cgroup v2 and on v1 hierarchies.
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmdirSync,
  statfsSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

const root = '/sys/fs/cgroup';
const cgroup2Magic = 0x63677270;

export function isCgroupV2(): boolean {
  return statfsSync(root).type === cgroup2Magic;
}

/** The v1 hierarchies a node's cgroup is made in (every mounted controller hierarchy). */
function v1Hierarchies(): string[] {
  return readdirSync(root)
    .map((name) => join(root, name))
    .filter((dir) => existsSync(join(dir, 'cgroup.procs')) && !dir.endsWith('/unified'));
}

/** Directories that make up cgroup `path` (one per v1 hierarchy, or the one v2 directory). */
function directories(path: string): string[] {
  return isCgroupV2() ? [join(root, path)] : v1Hierarchies().map((h) => join(h, path));
}

/** The hierarchy used to find a cgroup's processes (v1: pids, else the first one). */
function processHierarchy(): string {
  if (isCgroupV2()) return root;
  const hierarchies = v1Hierarchies();
  return hierarchies.find((h) => h.endsWith('/pids')) ?? hierarchies[0]!;
}

function copyCpuset(dir: string): void {
  for (const file of ['cpuset.cpus', 'cpuset.mems']) {
    const own = join(dir, file);
    if (existsSync(own) && readFileSync(own, 'utf8').trim() === '') {
      writeFileSync(own, readFileSync(join(dir, '..', file), 'utf8'));
    }
  }
}

/** Creates cgroup `path` (e.g. kvpool/3/node-1/system) in every hierarchy, controllers enabled on v2. */
export function createCgroup(path: string): void {
  const parts = path.split('/').filter(Boolean);
  if (isCgroupV2()) {
    const controllers = readFileSync(join(root, 'cgroup.controllers'), 'utf8').trim().split(/\s+/);
    let dir = root;
    for (const part of parts) {
      const enable = controllers.map((c) => `+${c}`).join(' ');
      if (enable) writeFileSync(join(dir, 'cgroup.subtree_control'), enable);
      dir = join(dir, part);
      mkdirSync(dir, { recursive: true });
    }
    return;
  }
  for (const hierarchy of v1Hierarchies()) {
    let dir = hierarchy;
    for (const part of parts) {
      dir = join(dir, part);
      mkdirSync(dir, { recursive: true });
      if (hierarchy.endsWith('/cpuset')) copyCpuset(dir);
    }
  }
}

/** Files a process writes its PID to, to join cgroup `path` in every hierarchy. */
export function cgroupProcsFiles(path: string): string[] {
  return directories(path).map((d) => join(d, 'cgroup.procs'));
}

/** A shell prefix that moves the shell into the cgroup before it execs the command that follows. */
export function joinCgroupScript(path: string): string {
  return cgroupProcsFiles(path)
    .map((f) => `echo $$ > '${f}'`)
    .join('; ');
}

/** PIDs in cgroup `path` and every cgroup below it. */
export function processesIn(path: string): number[] {
  const pids: number[] = [];
  const walk = (dir: string) => {
    if (!existsSync(dir)) return;
    for (const line of readFileSync(join(dir, 'cgroup.procs'), 'utf8').split('\n')) {
      if (line.trim()) pids.push(Number(line));
    }
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      if (entry.isDirectory()) walk(join(dir, entry.name));
    }
  };
  walk(join(processHierarchy(), path));
  return pids;
}

/** SIGKILLs every process in cgroup `path` (and below) until none is left. */
export async function killCgroup(path: string, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const pids = processesIn(path);
    if (!pids.length) return;
    if (Date.now() > deadline)
      throw new Error(`processes of cgroup ${path} survived SIGKILL: ${pids.join(' ')}`);
    for (const pid of pids) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // Gone already.
      }
    }
    await sleep(50);
  }
}

/** Kills everything in cgroup `path` and removes it (and the cgroups below it) from every hierarchy. */
export async function removeCgroup(path: string): Promise<void> {
  await killCgroup(path);
  const removeTree = (dir: string) => {
    if (!existsSync(dir)) return;
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      if (entry.isDirectory()) removeTree(join(dir, entry.name));
    }
    // A cgroup that just lost its last process can be busy for a moment.
    for (let attempt = 0; ; attempt++) {
      try {
        rmdirSync(dir);
        return;
      } catch (err) {
        if (attempt >= 50 || (err as NodeJS.ErrnoException).code !== 'EBUSY') throw err;
        Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 20);
      }
    }
  };
  for (const dir of directories(path)) removeTree(dir);
}
