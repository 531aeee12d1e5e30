// A store with replicated metadata as real processes: a TLS etcd of three members, leader replicas of
// kvpool-store `--election=Etcd` (each with its master and its tunnels), a ReadyProxy standing in for
// the leader Service, and members registering through it. What the operator renders, without a cluster.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../../local/ports.ts';
import type { ManagedProcess } from '../../local/processes.ts';
import { memberRpcTimeoutMs } from '../../src/controllers/backend/render-members.ts';
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
import { TcpRelay } from './tcp-relay.ts';
import { waitFor } from './wait.ts';

export interface EtcdStoreOptions {
  /** The first three octets of the loopback addresses this store's "Pods" use, e.g. `127.66.7`. */
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
  private readonly relays: TcpRelay[] = [];
  private lastRelay = 50;
  private lastLeader = 10;
  private lastMember = 20;

  readonly options: EtcdStoreOptions;

  private constructor(options: EtcdStoreOptions) {
    this.options = options;
  }

  static async start(options: EtcdStoreOptions): Promise<EtcdStore> {
    const store = new EtcdStore(options);
    // Addresses .51 to .59 are for relays in front of etcd, which its certificate must name too.
    const relayIps = Array.from({ length: 9 }, (_, i) => `${options.net}.${51 + i}`);
    store.etcd = await EtcdMembers.start(
      [1, 2, 3].map((i) => `${options.net}.${i}`),
      relayIps,
    );
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
        const res = await fetch(`${serving.adminUrl}/get_all_segments`, {
          signal: AbortSignal.timeout(1000),
        });
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

  /** A relay in front of each etcd member, for a leader a test may cut off from etcd. */
  private async relaysToEtcd(): Promise<{ endpoints: string[]; relays: TcpRelay[] }> {
    const relays: TcpRelay[] = [];
    for (const m of this.etcd.members) {
      this.lastRelay += 1;
      const ip = `${this.options.net}.${this.lastRelay}`;
      relays.push(await TcpRelay.start(ip, await freePort(ip), { host: m.ip, port: m.clientPort }));
    }
    this.relays.push(...relays);
    return { endpoints: relays.map((r) => `https://${r.host}:${r.port}`), relays };
  }

  /**
   * Starts one more leader replica (a new Pod: a new address, its own master). `cuttable`: it reaches
   * etcd through relays the test can cut (returned), as a partition would.
   */
  async addLeader(cuttable = false): Promise<StoreLeader & { etcdRelays?: TcpRelay[] }> {
    this.lastLeader += 1;
    const pod = this.pod('leader', this.lastLeader);
    const via = cuttable ? await this.relaysToEtcd() : undefined;
    const endpoints = via?.endpoints ?? this.etcd.endpoints;
    const ports = await Promise.all(endpoints.map(() => freePort(pod.ip)));
    const tunnels = endpoints.map((e, i) => `--etcd-tunnel=${pod.ip}:${ports[i]}=${e}`);
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
    // Running once its master answers: serving, following the OpLog, or starting to lead.
    await waitFor(() => probe(leader, '/readyz').catch(() => undefined), {
      what: `leader ${pod.ip} running its master`,
      until: (v) =>
        /^(master serving|standby:|master starting: service_ready=false, role=leader)/.test(v.reason),
      timeoutMs: 30_000,
    });
    this.proxy?.setTargets(this.targets());
    return via ? { ...leader, etcdRelays: via.relays } : leader;
  }

  /** Starts a member: a new Pod, or a new process in the Pod of one that ended (`on`: same address). */
  async addMember(on?: StorePod): Promise<StoreMember> {
    if (!on) this.lastMember += 1;
    const member = await startStoreMember({
      pod: on ?? this.pod('member', this.lastMember),
      master: this.proxy.address,
      segmentBytes: this.options.segmentBytes,
      logDir: this.logDir,
      env: {
        KUBECONFIG: 'none: a member addressed by Service never reaches the API',
        // As the operator renders a member's environment.
        MC_RPC_TIMEOUT_MS: String(memberRpcTimeoutMs),
        MC_RPC_CONNECT_TIMEOUT_MS: String(memberRpcTimeoutMs),
      },
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

  async killMember(member: StoreMember): Promise<void> {
    member.process.signal('SIGKILL');
    await member.process.exited;
  }

  /** SIGKILLs a replica's program and its master at once (a node lost, a container killed). */
  async killLeader(leader: StoreLeader): Promise<void> {
    leader.process.signal('SIGKILL');
    await leader.process.exited;
    this.proxy.setTargets(this.targets());
  }

  async stop(): Promise<void> {
    await this.proxy?.stop();
    for (const r of this.relays) await r.stop();
    for (const p of this.processes) {
      p.signal('SIGKILL');
      await p.exited;
    }
    await this.etcd?.stop();
  }
}
