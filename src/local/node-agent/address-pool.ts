// Addresses of a range handed out one per key (a Pod, a Service). Where the search starts depends on
// the key (and a salt), so a key tends to get the same address again, and two pools with different
// salts rarely pick the same one.
import { createHash } from 'node:crypto';

export function ipToNumber(ip: string): number {
  const parts = ip.split('.').map(Number);
  if (parts.length !== 4 || parts.some((p) => !Number.isInteger(p) || p < 0 || p > 255)) {
    throw new Error(`${ip} is not an IPv4 address`);
  }
  return ((parts[0]! << 24) | (parts[1]! << 16) | (parts[2]! << 8) | parts[3]!) >>> 0;
}

export function numberToIp(n: number): string {
  return [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join('.');
}

/** A CIDR's first address (as a number) and size. */
export function parseCidr(cidr: string): { base: number; size: number; bits: number } {
  const [ip, bitsText] = cidr.split('/');
  const bits = Number(bitsText);
  if (!ip || !Number.isInteger(bits) || bits < 8 || bits > 30)
    throw new Error(`${cidr} is not an IPv4 CIDR (/8 to /30)`);
  const size = 2 ** (32 - bits);
  return { base: ipToNumber(ip) - (ipToNumber(ip) % size), size, bits };
}

export class AddressPool {
  private readonly base: number;
  private readonly size: number;
  private readonly salt: string;
  private readonly byKey = new Map<string, string>();
  private readonly taken = new Set<string>();

  /** Addresses `first` .. `first + count - 1`, leaving out those ending in .0 and .255. */
  constructor(first: string, count: number, salt = '') {
    this.base = ipToNumber(first);
    this.size = count;
    this.salt = salt;
  }

  has(address: string): boolean {
    const n = ipToNumber(address);
    return n >= this.base && n < this.base + this.size;
  }

  /** Records an address already in use (read back from a Pod's status). False when it is not free. */
  reserve(key: string, address: string): boolean {
    if (this.byKey.get(key) === address) return true;
    if (this.taken.has(address) || !this.has(address) || !usable(address)) return false;
    this.release(key);
    this.byKey.set(key, address);
    this.taken.add(address);
    return true;
  }

  /** The key's address, allocated on first call. */
  allocate(key: string): string {
    const existing = this.byKey.get(key);
    if (existing) return existing;
    const start = createHash('sha256').update(`${this.salt}|${key}`).digest().readUInt32BE(0) % this.size;
    for (let n = 0; n < this.size; n++) {
      const candidate = numberToIp(this.base + ((start + n) % this.size));
      if (usable(candidate) && !this.taken.has(candidate)) {
        this.byKey.set(key, candidate);
        this.taken.add(candidate);
        return candidate;
      }
    }
    throw new Error(`no free address left among ${this.size} from ${numberToIp(this.base)}`);
  }

  get(key: string): string | undefined {
    return this.byKey.get(key);
  }

  release(key: string): void {
    const address = this.byKey.get(key);
    if (address === undefined) return;
    this.byKey.delete(key);
    this.taken.delete(address);
  }
}

function usable(address: string): boolean {
  return !address.endsWith('.0') && !address.endsWith('.255');
}
