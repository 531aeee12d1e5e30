// The baseline of the failover benchmark: Mooncake's own etcd-based HA (`--enable_ha
// --etcd_endpoints`, which the published wheel has) — three masters racing for etcd's lease and two
// members addressed `etcd://…` — on the same machine, sizes and timing rule as kvpool.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../local/ports.ts';
import { type ManagedProcess, startProcess } from '../local/processes.ts';
import { etcdBinary, mooncakeBinary } from '../local/toolchain.ts';
import { waitFor } from '../src/kube/wait-for.ts';

const memberBytes = 8 * 2 ** 30;

interface Master {
  ip: string;
  port: number;
  process?: ManagedProcess;
}

export class EtcdHaStore {
  private readonly dir = mkdtempSync(join(tmpdir(), 'kvpool-etcd-ha-'));
  private readonly logDir = join(this.dir, 'logs');
  private etcd?: ManagedProcess;
  private etcdUrl = '';
  private readonly masters: Master[] = [];
  private readonly members: ManagedProcess[] = [];

  async start(): Promise<void> {
    const [client, peer] = [await freePort(), await freePort()];
    this.etcdUrl = `http://127.0.0.1:${client}`;
    this.etcd = startProcess('etcd', etcdBinary(), {
      logDir: this.logDir,
      args: [
        `--data-dir=${join(this.dir, 'etcd')}`,
        `--listen-client-urls=${this.etcdUrl}`,
        `--advertise-client-urls=${this.etcdUrl}`,
        `--listen-peer-urls=http://127.0.0.1:${peer}`,
        `--initial-advertise-peer-urls=http://127.0.0.1:${peer}`,
        `--initial-cluster=default=http://127.0.0.1:${peer}`,
        '--log-level=warn',
      ],
    });
    await waitFor(async () => ((await fetch(`${this.etcdUrl}/health`)).ok ? true : undefined), {
      what: 'etcd',
      timeoutMs: 20_000,
    });
    for (let i = 1; i <= 3; i++) this.masters.push({ ip: `127.0.77.${i}`, port: await freePort() });
    for (const m of this.masters) this.startMaster(m);
    for (let i = 1; i <= 2; i++) {
      const host = `127.0.78.${i}`;
      this.members.push(
        startProcess(`member-${i}`, mooncakeBinary('mc_store_rest_server'), {
          logDir: this.logDir,
          args: ['--port', String(await freePort())],
          env: {
            ...process.env,
            MOONCAKE_MASTER: `etcd://127.0.0.1:${new URL(this.etcdUrl).port}`,
            MOONCAKE_TE_META_DATA_SERVER: 'P2PHANDSHAKE',
            MOONCAKE_PROTOCOL: 'tcp',
            MOONCAKE_LOCAL_HOSTNAME: host,
            MOONCAKE_GLOBAL_SEGMENT_SIZE: String(memberBytes),
          },
        }),
      );
    }
    await this.untilServingFull(120_000);
  }

  private startMaster(m: Master): void {
    m.process = startProcess(`master-${m.ip}`, mooncakeBinary('mooncake_master'), {
      logDir: this.logDir,
      args: [
        '--enable_ha=true',
        `--etcd_endpoints=${new URL(this.etcdUrl).host}`,
        `--rpc_address=${m.ip}`,
        '--rpc_port=50051',
        `--metrics_port=${m.port}`,
        `--metrics_host=${m.ip}`,
        '--enable_metric_reporting=false',
      ],
    });
  }

  /** The master that serves (service_ready) and reports every member's capacity. */
  async servingFull(): Promise<Master | undefined> {
    for (const m of this.masters) {
      if (!m.process?.running) continue;
      try {
        const health = (await (
          await fetch(`http://${m.ip}:${m.port}/health`, { signal: AbortSignal.timeout(500) })
        ).json()) as { service_ready?: boolean };
        if (!health.service_ready) continue;
        const metrics = await (
          await fetch(`http://${m.ip}:${m.port}/metrics`, { signal: AbortSignal.timeout(500) })
        ).text();
        if (new RegExp(`^master_total_capacity_bytes ${2 * memberBytes}$`, 'm').test(metrics)) return m;
      } catch {
        // Not this one.
      }
    }
    return undefined;
  }

  untilServingFull(timeoutMs = 60_000, not?: Master): Promise<Master> {
    return waitFor(
      async () => {
        const m = await this.servingFull();
        return m && m !== not ? m : undefined;
      },
      { what: 'a serving master with full capacity', timeoutMs, intervalMs: 50 },
    );
  }

  /** Kills the serving master (SIGTERM or SIGKILL) and returns the ms until another serves full capacity. */
  async failover(signal: 'SIGTERM' | 'SIGKILL'): Promise<number> {
    const leader = await this.untilServingFull();
    const t0 = performance.now();
    leader.process!.signal(signal);
    await this.untilServingFull(120_000, leader);
    const ms = performance.now() - t0;
    await leader.process!.stop();
    this.startMaster(leader); // back to three candidates
    return ms;
  }

  async stop(): Promise<void> {
    for (const p of this.members) await p.stop();
    for (const m of this.masters) await m.process?.stop();
    await this.etcd?.stop();
    rmSync(this.dir, { recursive: true, force: true });
  }
}
