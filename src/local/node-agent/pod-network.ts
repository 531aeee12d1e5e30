// The addresses of the local cluster's nodes and Pods. EndpointSlices and Endpoints refuse loopback
// addresses, so Pods cannot use 127.x; instead the node agent makes one block of 198.18.0.0/15 (the
// benchmarking range, RFC 2544) local to this machine with a single route (`ip route add local <block>
// dev lo`): every address in it can be bound and reached here, like 127.x, with no interface per Pod.
// Each running node agent takes its own block (a lock file names the owning process) and removes the
// route when it stops.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AddressPool, numberToIp, parseCidr } from './address-pool.ts';

export const defaultPodNetwork = '198.18.0.0/15';
const blockBits = 20;
/** The first addresses of a block are the nodes'; Pods get the rest. */
const nodeAddresses = 16;
/** Blocks held by agents of this process. */
const held = new Set<string>();

export interface PodNetwork {
  /** The block this agent owns, for example 198.18.16.0/20. */
  cidr: string;
  nodeIP(index: number): string;
  pods: AddressPool;
  release(): void;
}

function lockDir(): string {
  return existsSync('/run') ? '/run/kvpool/pod-networks' : join(tmpdir(), 'kvpool-pod-networks');
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Local routes already on this machine, as [first address, size]. */
function localRoutes(ip: string): [number, number][] {
  const out = execFileSync(ip, ['-4', 'route', 'show', 'table', 'local'], { encoding: 'utf8' });
  const routes: [number, number][] = [];
  for (const line of out.split('\n')) {
    const m = /^local (\d+\.\d+\.\d+\.\d+)(?:\/(\d+))?/.exec(line.trim());
    if (!m) continue;
    const bits = Number(m[2] ?? 32);
    const { base, size } = bits >= 8 && bits <= 30 ? parseCidr(`${m[1]}/${bits}`) : { base: 0, size: 0 };
    if (size) routes.push([base, size]);
  }
  return routes;
}

/**
 * Takes a free block of `range`, makes it local to this machine and returns its address pools. The
 * same salt (the agent's root) gets the same block whenever it is free.
 */
export function acquirePodNetwork(ip: string, range = defaultPodNetwork, salt = ''): PodNetwork {
  const { base, size } = parseCidr(range);
  const blockSize = 2 ** (32 - blockBits);
  const blocks = Math.max(1, Math.floor(size / blockSize));
  const dir = lockDir();
  mkdirSync(dir, { recursive: true });
  const routes = localRoutes(ip);
  // The salt picks where the search starts, so a restarted agent gets its block back.
  const offset = createHash('sha256').update(salt).digest().readUInt32BE(0) % blocks;
  for (let i = 0; i < blocks; i++) {
    const first = base + ((offset + i) % blocks) * blockSize;
    const cidr = `${numberToIp(first)}/${blockBits}`;
    const lock = join(dir, `${numberToIp(first)}-${blockBits}`);
    let owner: number | undefined;
    try {
      owner = Number(readFileSync(lock, 'utf8').trim());
    } catch {
      // Unclaimed.
    }
    if (held.has(cidr) || (owner !== undefined && owner !== process.pid && alive(owner))) continue;
    // A route of someone else's (no lock of ours) over this block: leave it alone.
    const overlaps = routes.some(([b, s]) => b < first + blockSize && first < b + s);
    if (overlaps && owner === undefined) continue;
    writeFileSync(lock, `${process.pid}\n`);
    execFileSync(ip, ['route', 'replace', 'local', cidr, 'dev', 'lo']);
    held.add(cidr);
    const cleanup = () => {
      held.delete(cidr);
      try {
        execFileSync(ip, ['route', 'del', 'local', cidr, 'dev', 'lo'], { stdio: 'ignore' });
      } catch {
        // Already gone.
      }
      rmSync(lock, { force: true });
    };
    process.once('exit', cleanup);
    return {
      cidr,
      nodeIP: (index) => numberToIp(first + 1 + index),
      pods: new AddressPool(numberToIp(first + nodeAddresses), blockSize - nodeAddresses - 1, salt),
      release: () => {
        process.off('exit', cleanup);
        cleanup();
      },
    };
  }
  throw new Error(`no free /${blockBits} block left in ${range} for the local cluster's Pods`);
}
