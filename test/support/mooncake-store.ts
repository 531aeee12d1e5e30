// A real Mooncake store for tests: the published wheel's mooncake_master and N members
// (mc_store_rest_server), each member on its own 127.x address contributing a fixed number of bytes.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { freePort } from '../../local/ports.ts';
import { type ManagedProcess, startProcess } from '../../local/processes.ts';
import { mooncakeBinary } from '../../local/toolchain.ts';
import { isMountPoint, mountTmpfs, unmount } from './small-filesystem.ts';
import { waitFor } from './wait.ts';

export interface Tenant {
  name: string;
  quota: number;
}

export interface MooncakeStoreOptions {
  members: number;
  memberBytes: number;
  /** Start the master with a tenant ledger seeded from this policy. */
  tenants?: Tenant[];
  /** Members with a local disk tier in their own directory; the master with offload. */
  offload?: boolean;
  masterArgs?: string[];
  memberEnv?: Record<string, string>;
  /** Each member's tier directory is a tmpfs of this many bytes (mounted as root, unmounted on stop). */
  tierFilesystemBytes?: number;
}

export interface Member {
  index: number;
  host: string;
  restPort: number;
  offloadDir?: string;
  /** The root of the tmpfs holding offloadDir, when the store was given tierFilesystemBytes. */
  filesystem?: string;
  process?: ManagedProcess;
}

let instances = 0;

/** A /16 of loopback addresses per store, so stores in parallel test files never share an address. */
function hostBlock(): string {
  instances += 1;
  return `127.${10 + ((process.pid * 7 + instances) % 240)}`;
}

export class MooncakeStore {
  readonly dir: string;
  readonly logDir: string;
  readonly members: Member[] = [];
  readonly policyFile: string;
  private readonly options: MooncakeStoreOptions;
  private master?: ManagedProcess;
  private ports!: { rpc: number; admin: number };
  private readonly block = hostBlock();

  private constructor(options: MooncakeStoreOptions) {
    this.options = options;
    this.dir = mkdtempSync(join(tmpdir(), 'kvpool-mooncake-'));
    this.logDir = join(this.dir, 'logs');
    this.policyFile = join(this.dir, 'tenant-quota-policy.yaml');
  }

  static async start(options: MooncakeStoreOptions): Promise<MooncakeStore> {
    const store = new MooncakeStore(options);
    try {
      store.ports = { rpc: await freePort(), admin: await freePort() };
      if (options.tenants)
        writeFileSync(store.policyFile, stringify({ version: 1, tenants: options.tenants }));
      await store.startMaster();
      for (let i = 0; i < options.members; i++) {
        const member: Member = { index: i, host: `${store.block}.${i + 1}.1`, restPort: await freePort() };
        if (options.offload) {
          member.offloadDir = join(store.dir, `disk-${i}`);
          mkdirSync(member.offloadDir);
          if (options.tierFilesystemBytes !== undefined) {
            // The filesystem's root holds the tier directory, so other files can share the filesystem.
            mountTmpfs(member.offloadDir, options.tierFilesystemBytes);
            member.filesystem = member.offloadDir;
            member.offloadDir = join(member.offloadDir, 'tier');
            mkdirSync(member.offloadDir);
          }
        }
        store.members.push(member);
        await store.startMember(i);
      }
      await store.waitForCapacity(options.members * options.memberBytes);
      return store;
    } catch (err) {
      await store.stop();
      throw err;
    }
  }

  /** host:port engines and members dial. */
  get rpcAddress(): string {
    return `127.0.0.1:${this.ports.rpc}`;
  }

  /** Base URL of the admin/metrics server. */
  get adminUrl(): string {
    return `http://127.0.0.1:${this.ports.admin}`;
  }

  get adminAddress(): string {
    return `127.0.0.1:${this.ports.admin}`;
  }

  async startMaster(): Promise<void> {
    const args = [
      '--rpc_address=127.0.0.1',
      `--rpc_port=${this.ports.rpc}`,
      `--metrics_port=${this.ports.admin}`,
      '--metrics_host=127.0.0.1',
      '--enable_metric_reporting=false',
      ...(this.options.tenants
        ? [
            '--enable_multi_tenants=true',
            '--tenant_quota_connector_type=file',
            `--tenant_quota_connector_uri=${this.policyFile}`,
          ]
        : []),
      ...(this.options.offload ? ['--enable_offload=true', '--offload_on_evict=true'] : []),
      ...(this.options.masterArgs ?? []),
    ];
    this.master = startProcess('mooncake_master', mooncakeBinary('mooncake_master'), {
      logDir: this.logDir,
      args,
    });
    await waitFor(
      async () => {
        this.master!.assertRunning();
        const health = (await (await fetch(`${this.adminUrl}/health`)).json()) as { service_ready?: boolean };
        return health.service_ready ? true : undefined;
      },
      { what: `mooncake_master on ${this.adminUrl} (log: ${this.master.logFile})`, timeoutMs: 30_000 },
    );
  }

  async stopMaster(signal: 'SIGTERM' | 'SIGKILL' = 'SIGTERM'): Promise<void> {
    if (signal === 'SIGKILL') this.master?.signal('SIGKILL');
    await this.master?.stop();
  }

  async startMember(i: number): Promise<void> {
    const m = this.members[i]!;
    const env: Record<string, string> = {
      ...(process.env as Record<string, string>),
      MOONCAKE_MASTER: this.rpcAddress,
      MOONCAKE_TE_META_DATA_SERVER: 'P2PHANDSHAKE',
      MOONCAKE_PROTOCOL: 'tcp',
      MOONCAKE_LOCAL_HOSTNAME: m.host,
      MOONCAKE_GLOBAL_SEGMENT_SIZE: String(this.options.memberBytes),
      MOONCAKE_LOCAL_BUFFER_SIZE: '0',
      MC_TE_METRIC: '1',
      ...(m.offloadDir
        ? {
            MOONCAKE_OFFLOAD_ENABLED: 'true',
            MOONCAKE_OFFLOAD_FILE_STORAGE_PATH: m.offloadDir,
            MOONCAKE_OFFLOAD_BUCKET_SIZE_LIMIT_BYTES: String(16 << 20),
            MOONCAKE_OFFLOAD_BUCKET_KEYS_LIMIT: '64',
          }
        : {}),
      ...this.options.memberEnv,
    };
    m.process = startProcess(`member-${i}`, mooncakeBinary('mc_store_rest_server'), {
      logDir: this.logDir,
      args: ['--port', String(m.restPort)],
      env,
    });
  }

  async stopMember(i: number): Promise<void> {
    await this.members[i]?.process?.stop();
  }

  async metrics(): Promise<string> {
    const res = await fetch(`${this.adminUrl}/metrics`);
    return res.text();
  }

  /** One sample of a Prometheus family without labels, or undefined when absent. */
  async metric(name: string): Promise<number | undefined> {
    const line = (await this.metrics()).split('\n').find((l) => l.startsWith(`${name} `));
    return line === undefined ? undefined : Number(line.split(' ')[1]);
  }

  async waitForCapacity(bytes: number, timeoutMs = 30_000): Promise<void> {
    await waitFor(
      async () => ((await this.metric('master_total_capacity_bytes')) === bytes ? true : undefined),
      {
        what: `master_total_capacity_bytes to reach ${bytes} (logs: ${this.logDir})`,
        timeoutMs,
      },
    );
  }

  async stop(): Promise<void> {
    for (const m of [...this.members].reverse()) await m.process?.stop();
    await this.master?.stop();
    for (const m of this.members) if (m.filesystem && isMountPoint(m.filesystem)) unmount(m.filesystem);
    rmSync(this.dir, { recursive: true, force: true });
  }
}
