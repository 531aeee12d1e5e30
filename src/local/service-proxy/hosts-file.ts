// The names containers resolve through their /etc/hosts: Services (the stand-in for cluster DNS) and
// the Pod's own hostname. Hosts files are bind-mounted into containers, so they are rewritten in place
// (same inode): a renamed replacement would never reach a mount made before it.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';

export interface HostsEntry {
  address: string;
  names: string[];
}

/** Names that change over time (the Services), with a way to hear when they do. */
export interface ClusterNames {
  /** Entries for a container in `namespace` (bare Service names resolve within its own namespace). */
  entries(namespace?: string): HostsEntry[];
  /** Calls `listener` after every change; returns the unsubscribe function. */
  subscribe(listener: () => void): () => void;
}

const localhost: HostsEntry[] = [
  { address: '127.0.0.1', names: ['localhost'] },
  { address: '::1', names: ['localhost', 'ip6-localhost', 'ip6-loopback'] },
];

/** The file's text: localhost, then the given entries (a Pod's own name first), one line each. */
export function renderHosts(entries: HostsEntry[]): string {
  const lines = ['# Kubernetes-managed hosts file (local cluster).'];
  for (const e of [...localhost, ...entries]) lines.push(`${e.address}\t${e.names.join(' ')}`);
  return `${lines.join('\n')}\n`;
}

/** Writes `text` into `path` in place; does nothing when the file already holds it. */
export function writeInPlace(path: string, text: string): boolean {
  if (existsSync(path) && readFileSync(path, 'utf8') === text) return false;
  writeFileSync(path, text);
  return true;
}
