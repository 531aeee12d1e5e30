// A Pod's "sandbox" on the local cluster: its directory (logs, volumes, per-container files), its IP
// (a loopback address of its own; the node's for hostNetwork Pods) and its /etc/hosts (its own name
// plus every Service, see ../service-proxy/hosts-file.ts).
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  type ClusterNames,
  type HostsEntry,
  renderHosts,
  writeInPlace,
} from '../service-proxy/hosts-file.ts';
import type { AddressPool } from './address-pool.ts';
import type { Pod } from './pod-types.ts';

export interface SandboxNode {
  name: string;
  ip: string;
}

/** `<namespace>_<name>_<uid>`, the Pod's directory under `<root>/pods`. */
export function podDirName(pod: Pod): string {
  return `${pod.metadata.namespace}_${pod.metadata.name}_${pod.metadata.uid}`;
}

export class PodSandbox {
  readonly dir: string;
  readonly hostsFile: string;
  readonly hostname: string;
  private readonly pod: Pod;
  private readonly node: SandboxNode;
  private readonly pool: AddressPool;
  private readonly names: ClusterNames | undefined;
  podIP: string | undefined;

  constructor(root: string, pod: Pod, node: SandboxNode, pool: AddressPool, names?: ClusterNames) {
    this.pod = pod;
    this.node = node;
    this.pool = pool;
    this.names = names;
    this.dir = join(root, 'pods', podDirName(pod));
    this.hostsFile = join(this.dir, 'etc-hosts');
    this.hostname = pod.spec.hostNetwork ? node.name : (pod.spec.hostname ?? pod.metadata.name!).slice(0, 63);
  }

  get hostIP(): string {
    return this.node.ip;
  }

  /** Creates the directory, takes an IP (keeping the one the Pod's status already shows) and writes hosts. */
  ensure(): void {
    mkdirSync(this.dir, { recursive: true });
    writeFileSync(join(this.dir, 'node'), `${this.node.name}\n`);
    if (!this.podIP) {
      const uid = this.pod.metadata.uid!;
      const previous = this.pod.status?.podIP;
      if (this.pod.spec.hostNetwork) this.podIP = this.node.ip;
      else if (previous && this.pool.reserve(uid, previous)) this.podIP = previous;
      else this.podIP = this.pool.allocate(uid);
    }
    this.writeHosts();
  }

  private ownEntry(): HostsEntry {
    const { subdomain } = this.pod.spec;
    const names = subdomain
      ? [`${this.hostname}.${subdomain}.${this.pod.metadata.namespace}.svc.cluster.local`, this.hostname]
      : [this.hostname];
    return { address: this.podIP!, names };
  }

  /** Rewrites /etc/hosts in place (Services come and go). */
  writeHosts(): void {
    if (!this.podIP) return;
    writeInPlace(
      this.hostsFile,
      renderHosts([this.ownEntry(), ...(this.names?.entries(this.pod.metadata.namespace) ?? [])]),
    );
  }

  /** Gives the IP back and removes everything but the container logs. */
  release(): void {
    if (!this.pod.spec.hostNetwork) this.pool.release(this.pod.metadata.uid!);
    for (const sub of ['volumes', 'containers', 'etc-hosts']) {
      rmSync(join(this.dir, sub), { recursive: true, force: true });
    }
  }
}
