// A real etcd of 1 to 5 members as processes of this machine, each on its own loopback address, with
// TLS between members and to clients from the CA and certificates the operator would make for a store
// (makeEtcdTls): the etcd a store with replicated metadata runs on, without a cluster around it.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../../local/ports.ts';
import { type ManagedProcess, startProcess } from '../../local/processes.ts';
import { etcdBinary } from '../../local/toolchain.ts';
import { makeEtcdTls } from '../../src/controllers/backend/etcd-secrets.ts';
import { waitFor } from './wait.ts';

export interface EtcdMember {
  name: string;
  ip: string;
  clientPort: number;
  peerPort: number;
  metricsPort: number;
  process?: ManagedProcess;
}

export class EtcdMembers {
  readonly dir = mkdtempSync(join(tmpdir(), 'kvpool-etcd-'));
  readonly members: EtcdMember[] = [];
  /** ca.crt, tls.crt and tls.key of the masters' client certificate. */
  readonly clientTlsDir = join(this.dir, 'client-tls');
  private readonly serverTlsDir = join(this.dir, 'server-tls');

  /** `ips`: one loopback address per member; `alsoNamed`: more addresses its certificate covers (relays). */
  static async start(ips: string[], alsoNamed: string[] = []): Promise<EtcdMembers> {
    const etcd = new EtcdMembers();
    for (const [i, ip] of ips.entries()) {
      const [clientPort, peerPort, metricsPort] = [
        await freePort(ip),
        await freePort(ip),
        await freePort(ip),
      ];
      etcd.members.push({ name: `etcd-${i}`, ip, clientPort, peerPort, metricsPort });
    }
    const tls = await makeEtcdTls('kvpool test etcd', [...ips, ...alsoNamed, 'localhost']);
    for (const [dir, files] of [
      [etcd.serverTlsDir, tls.server],
      [etcd.clientTlsDir, tls.client],
    ] as const) {
      mkdirSync(dir, { recursive: true });
      for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text, { mode: 0o600 });
    }
    for (const m of etcd.members) etcd.startMember(m);
    await etcd.waitHealthy();
    return etcd;
  }

  /** https://ip:port of every member, as the masters' tunnels dial them. */
  get endpoints(): string[] {
    return this.members.map((m) => `https://${m.ip}:${m.clientPort}`);
  }

  startMember(m: EtcdMember): void {
    const t = (f: string) => join(this.serverTlsDir, f);
    const cluster = this.members.map((p) => `${p.name}=https://${p.ip}:${p.peerPort}`).join(',');
    m.process = startProcess(m.name, etcdBinary(), {
      logDir: join(this.dir, 'logs'),
      args: [
        `--name=${m.name}`,
        `--data-dir=${join(this.dir, m.name)}`,
        `--listen-client-urls=https://${m.ip}:${m.clientPort}`,
        `--advertise-client-urls=https://${m.ip}:${m.clientPort}`,
        `--listen-peer-urls=https://${m.ip}:${m.peerPort}`,
        `--initial-advertise-peer-urls=https://${m.ip}:${m.peerPort}`,
        `--initial-cluster=${cluster}`,
        '--initial-cluster-state=new',
        `--listen-metrics-urls=http://${m.ip}:${m.metricsPort}`,
        `--cert-file=${t('tls.crt')}`,
        `--key-file=${t('tls.key')}`,
        `--trusted-ca-file=${t('ca.crt')}`,
        '--client-cert-auth=true',
        `--peer-cert-file=${t('tls.crt')}`,
        `--peer-key-file=${t('tls.key')}`,
        `--peer-client-cert-file=${t('peer-client.crt')}`,
        `--peer-client-key-file=${t('peer-client.key')}`,
        `--peer-trusted-ca-file=${t('ca.crt')}`,
        '--peer-client-cert-auth=true',
        '--log-level=warn',
      ],
    });
  }

  /** Whether this member answers /health with a quorum behind it. */
  async healthy(m: EtcdMember): Promise<boolean> {
    try {
      const res = await fetch(`http://${m.ip}:${m.metricsPort}/health`, {
        signal: AbortSignal.timeout(1000),
      });
      return res.ok && ((await res.json()) as { health?: string }).health === 'true';
    } catch {
      return false;
    }
  }

  async waitHealthy(timeoutMs = 30_000): Promise<void> {
    const running = this.members.filter((m) => m.process && !m.process.exit);
    await waitFor(
      async () =>
        (await Promise.all(running.map((m) => this.healthy(m)))).every(Boolean) ? true : undefined,
      {
        what: `etcd members ${running.map((m) => m.name).join(', ')} healthy`,
        timeoutMs,
      },
    );
  }

  async kill(m: EtcdMember): Promise<void> {
    m.process?.signal('SIGKILL');
    await m.process?.exited;
  }

  async stop(): Promise<void> {
    for (const m of this.members) await this.kill(m);
    rmSync(this.dir, { recursive: true, force: true });
  }
}
