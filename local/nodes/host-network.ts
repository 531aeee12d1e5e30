// The host side of a local cluster's network: a bridge holding the API server's address, one network
// namespace per node joined to it by a veth pair, and routes to each node's Pod range. A cluster leases
// a slot (a lock file naming its process); a slot whose process is gone is swept before reuse, so a
// killed run leaves nothing that outlives the next start.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { processAlive, tryLock } from '../../images/file-lock.ts';
import { type ClusterAddressing, clusterAddressing, maxSlots } from './addressing.ts';
import { processesIn, removeCgroup } from './cgroups.ts';

const lockDir = '/run/kvpool/clusters';

function ip(...args: string[]): string {
  return execFileSync('ip', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}

function quietly(fn: () => unknown): void {
  try {
    fn();
  } catch {
    // Already gone.
  }
}

/** Runs a command inside a node's network namespace. */
export function inNetns(netns: string, command: string[]): string {
  return execFileSync('ip', ['netns', 'exec', netns, ...command], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

/** The slot's cgroup, under which every node of the cluster puts its processes. */
export const slotCgroup = (slot: number) => `kvpool/${slot}`;

/** Removes everything a slot's cluster made on the host: processes, namespaces, devices, cgroups. */
export async function sweepSlot(slot: number): Promise<void> {
  const a = clusterAddressing(slot);
  await removeCgroup(slotCgroup(slot));
  const namespaces = ip('netns', 'list')
    .split('\n')
    .map((l) => l.split(' ')[0]!)
    .filter((n) => n.startsWith(`kvpool${slot}-`));
  for (const ns of namespaces) quietly(() => ip('netns', 'delete', ns));
  quietly(() => ip('link', 'delete', a.bridge));
}

export class HostNetwork {
  readonly addressing: ClusterAddressing;
  private readonly lock: string;
  private readonly nodes = new Map<number, { podCidr?: string }>();

  private constructor(addressing: ClusterAddressing, lock: string) {
    this.addressing = addressing;
    this.lock = lock;
  }

  /** Leases a free slot (sweeping slots whose process is gone) and creates the cluster's bridge. */
  static async acquire(): Promise<HostNetwork> {
    mkdirSync(lockDir, { recursive: true });
    for (let slot = 0; slot < maxSlots; slot++) {
      const lock = join(lockDir, String(slot));
      if (!(await HostNetwork.claim(slot, lock))) continue;
      const net = new HostNetwork(clusterAddressing(slot), lock);
      try {
        net.createBridge();
        return net;
      } catch (err) {
        await net.release();
        throw err;
      }
    }
    throw new Error(`all ${maxSlots} local cluster slots are in use (${lockDir})`);
  }

  private static async claim(slot: number, lock: string): Promise<boolean> {
    if (!tryLock(lock)) return false;
    await sweepSlot(slot); // whatever a killed owner left
    return true;
  }

  private createBridge(): void {
    const a = this.addressing;
    ip('link', 'add', a.bridge, 'type', 'bridge');
    ip('addr', 'add', `${a.hostAddress}/24`, 'dev', a.bridge);
    ip('link', 'set', a.bridge, 'up');
  }

  /** Node k's network namespace, joined to the bridge, with its address and a default route. */
  addNode(k: number): void {
    const a = this.addressing;
    const n = a.node(k);
    quietly(() => ip('netns', 'delete', n.netns));
    ip('netns', 'add', n.netns);
    ip('link', 'add', n.hostVeth, 'type', 'veth', 'peer', 'name', n.nodeVeth);
    ip('link', 'set', n.hostVeth, 'master', a.bridge, 'up');
    ip('link', 'set', n.nodeVeth, 'netns', n.netns);
    inNetns(n.netns, ['ip', 'link', 'set', 'lo', 'up']);
    inNetns(n.netns, ['ip', 'link', 'set', n.nodeVeth, 'name', 'eth0']);
    inNetns(n.netns, ['ip', 'addr', 'add', `${n.address}/24`, 'dev', 'eth0']);
    inNetns(n.netns, ['ip', 'link', 'set', 'eth0', 'up']);
    inNetns(n.netns, ['ip', 'route', 'add', 'default', 'via', a.hostAddress]);
    // A node forwards between its Pods and the bridge; Service rules must see bridged Pod traffic.
    inNetns(n.netns, ['sysctl', '-q', '-w', 'net.ipv4.ip_forward=1']);
    quietly(() => inNetns(n.netns, ['sysctl', '-q', '-w', 'net.bridge.bridge-nf-call-iptables=1']));
    this.nodes.set(k, {});
    this.refreshPodRoutes();
  }

  /** Records node k's Pod range and routes it from the host and from every other node. */
  setPodCidr(k: number, podCidr: string): void {
    const node = this.nodes.get(k);
    if (!node) throw new Error(`node ${k} has no network`);
    node.podCidr = podCidr;
    this.refreshPodRoutes();
  }

  private refreshPodRoutes(): void {
    const a = this.addressing;
    for (const [k, { podCidr }] of this.nodes) {
      if (!podCidr) continue;
      const via = a.node(k).address;
      ip('route', 'replace', podCidr, 'via', via, 'dev', a.bridge);
      for (const other of this.nodes.keys()) {
        if (other !== k) inNetns(a.node(other).netns, ['ip', 'route', 'replace', podCidr, 'via', via]);
      }
    }
  }

  /** Deletes node k's namespace (its Pods' interfaces go with it) and its routes. */
  removeNode(k: number): void {
    const podCidr = this.nodes.get(k)?.podCidr;
    if (podCidr) quietly(() => ip('route', 'delete', podCidr));
    quietly(() => ip('netns', 'delete', this.addressing.node(k).netns));
    this.nodes.delete(k);
  }

  /** Removes every trace of the cluster's network and gives the slot back. */
  async release(): Promise<void> {
    await sweepSlot(this.addressing.slot);
    rmSync(this.lock, { force: true });
  }
}

/** What slot `slot`'s cluster has on this machine now: devices, namespaces, its lock, processes. */
export function slotTraces(slot: number): string[] {
  const ours = new RegExp(`^kvpool${slot}(h|n|-|$)`);
  const traces: string[] = [];
  for (const line of ip('-o', 'link', 'show').split('\n')) {
    const name = /^\d+: ([^:@]+)/.exec(line)?.[1];
    if (name && ours.test(name)) traces.push(`link ${name}`);
  }
  for (const line of ip('netns', 'list').split('\n')) {
    const name = line.split(' ')[0]!;
    if (ours.test(name)) traces.push(`netns ${name}`);
  }
  if (existsSync(join(lockDir, String(slot)))) traces.push(`lock ${join(lockDir, String(slot))}`);
  for (const pid of processesIn(slotCgroup(slot))) traces.push(`process ${pid}`);
  return traces;
}

/** Traces of clusters whose process is gone (what a run that stopped everything must not leave). */
export function abandonedTraces(): string[] {
  const traces: string[] = [];
  for (let slot = 0; slot < maxSlots; slot++) {
    let owner = 0;
    try {
      owner = Number(readFileSync(join(lockDir, String(slot)), 'utf8').trim());
    } catch {
      // No lock: no live cluster owns the slot.
    }
    if (owner && processAlive(owner)) continue;
    traces.push(...slotTraces(slot));
  }
  return traces;
}

/** Removes what clusters whose owner is gone left behind (a killed run); returns what it removed. */
export async function sweepAbandoned(): Promise<string[]> {
  const removed: string[] = [];
  mkdirSync(lockDir, { recursive: true });
  for (let slot = 0; slot < maxSlots; slot++) {
    const lock = join(lockDir, String(slot));
    const traces = slotTraces(slot).filter((t) => t !== `lock ${lock}`);
    if (!traces.length || !tryLock(lock)) continue;
    try {
      await sweepSlot(slot);
      removed.push(...traces);
    } finally {
      rmSync(lock, { force: true });
    }
  }
  return removed;
}

/** The slot of the cluster whose API server listens at `address` (see addressing.ts). */
export function slotOfAddress(address: string): number {
  const second = Number(address.split('.')[1]);
  return second - 64;
}
