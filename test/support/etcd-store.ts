// A store with replicated metadata as real processes: a TLS etcd of three members, leader replicas of
// kvpool-store `--election=Etcd` (each with its master and its tunnels), a ReadyProxy standing in for
// the leader Service, and members registering through it. What the operator renders, without a cluster.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../../local/ports.ts';
import type { ManagedProcess } from '../../local/processes.ts';
import { EtcdMembers } from './etcd-members.ts';
import { ReadyProxy } from './ready-proxy.ts';
import {
  probe,
  type StoreLeader,
  type StoreMember,
  type StorePod,
  startStoreLeader,
  startStoreMember,
} from './store-program.ts';
import { waitFor } from './wait.ts';

export interface EtcdStoreOptions {
  /** The first three octets of the loopback addresses this store's "Pods" use, e.g. `127.61.7`. */
  net: string;
  leaders: number;
  members: number;
  segmentBytes: number;
  /** More mooncake_master flags (tenancy, a shorter poll). */
  masterArgs?: string[];
  /** Without the OpLog: Mooncake's etcd HA alone (the anchor; a new leader starts empty). */
  oplog?: boolean;
}

export class EtcdStore {
  readonly logDir = mkdtempSync(join(tmpdir(), 'kvpool-etcd-store-'));
  etcd!: EtcdMembers;
  proxy!: ReadyProxy;
  readonly leaders: StoreLeader[] = [];
  readonly members: StoreMember[] = [];
  private readonly processes: ManagedProcess[] = [];
  private lastLeader = 10;
  private lastMember = 20;

  readonly options: EtcdStoreOptions;

  private constructor(options: EtcdStoreOptions) {
    this.options = options;
  }

  static async start(options: EtcdStoreOptions): Promise<EtcdStore> {
    const store = new EtcdStore(options);
    store.etcd = await EtcdMembers.start([1, 2, 3].map((i) => `${options.net}.${i}`));
    for (let i = 0; i < options.leaders; i++) await store.addLeader();
    store.proxy = await ReadyProxy.start(
      `${options.net}.30`,
      await freePort(`${options.net}.30`),
      store.targets(),
    );
    await store.waitServing();
    for (let i = 0; i < options.members; i++) await store.addMember();
    await store.waitMounted(options.members);
    return store;
  }

  /** Waits until the serving master lists this many segments. */
  async waitMounted(count: number, timeoutMs = 60_000): Promise<void> {
    await waitFor(
      async () => {
        const serving = await this.serving();
        if (!serving) return undefined;
        const res = await fetch(`${serving.adminUrl}/get_all_segments`, { signal: AbortSignal.timeout(1000) });
        return (await res.text()).split('\n').filter(Boolean).length;
      },
      { what: `${count} segments on the serving master`, until: (n) => n >= count, timeoutMs },
    );
  }

  private pod(prefix: string, host: number): StorePod {
    return { name: `${prefix}-${host}`, namespace: 'etcd-store', ip: `${this.options.net}.${host}` };
  }

  private targets() {
    return this.leaders
      .filter((l) => l.process.running)
      .map((l) => ({ readyUrl: `${l.probeUrl}/readyz`, host: l.pod.ip, port: l.rpcPort }));
  }

  /** Starts one more leader replica (a new Pod: a new address, its own master). */
  async addLeader(): Promise<StoreLeader> {
    this.lastLeader += 1;
    const pod = this.pod('leader', this.lastLeader);
    const ports = await Promise.all(this.etcd.endpoints.map(() => freePort(pod.ip)));
    const tunnels = this.etcd.endpoints.map((e, i) => `--etcd-tunnel=${pod.ip}:${ports[i]}=${e}`);
    const local = ports.map((p) => `${pod.ip}:${p}`).join(';');
    const leader = await startStoreLeader({
      pod,
      flags: ['--election=Etcd', `--etcd-tls-dir=${this.etcd.clientTlsDir}`, ...tunnels],
      masterArgs: [
        '-enable_ha=true',
        `-enable_oplog=${this.options.oplog ?? true}`,
        `-etcd_endpoints=${local}`,
        `-cluster_id=kvpool.test.${this.options.net.replaceAll('.', '-')}`,
        ...(this.options.masterArgs ?? []),
      ],
      logDir: this.logDir,
      kubeconfig: 'none: an etcd-elected leader never reaches the API',
    });
    this.leaders.push(leader);
    this.processes.push(leader.process);
    this.proxy?.setTargets(this.targets());
    return leader;
  }

  async addMember(): Promise<StoreMember> {
    this.lastMember += 1;
    const member = await startStoreMember({
      pod: this.pod('member', this.lastMember),
      master: this.proxy.address,
      segmentBytes: this.options.segmentBytes,
      logDir: this.logDir,
      env: { KUBECONFIG: 'none: a member addressed by Service never reaches the API' },
    });
    this.members.push(member);
    this.processes.push(member.process);
    return member;
  }

  /** The replica whose /readyz answers 200 (the one the Service would route to). */
  async serving(): Promise<StoreLeader | undefined> {
    for (const l of this.leaders.filter((x) => x.process.running)) {
      if ((await probe(l, '/readyz').catch(() => undefined))?.status === 200) return l;
    }
    return undefined;
  }

  async waitServing(timeoutMs = 60_000): Promise<StoreLeader> {
    return waitFor(() => this.serving(), { what: 'a serving master', timeoutMs, intervalMs: 100 });
  }

  /** SIGKILLs a replica's program and its master at once (a node lost, a container killed). */
  async killLeader(leader: StoreLeader): Promise<void> {
    leader.process.signal('SIGKILL');
    await leader.process.exited;
    this.proxy.setTargets(this.targets());
  }

  async stop(): Promise<void> {
    await this.proxy?.stop();
    for (const p of this.processes) {
      p.signal('SIGKILL');
      await p.exited;
    }
    await this.etcd?.stop();
  }
}
