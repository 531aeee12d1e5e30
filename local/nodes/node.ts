// One real node of the local cluster: containerd, the kubelet and kube-proxy in the node's own
// network namespace and mount namespace, all in the node's cgroup. In the mount namespace /var/lib
// and /var/log are the node's directories (<cluster root>/nodes/<node>/var/…) and /run is a fresh
// tmpfs, so a hostPath like /var/lib/kvcache is per node, as on separate machines; the rest of the
// file system is the machine's. See docs/local-cluster.md.
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { CertificateAuthority } from '../../src/kube/pki.ts';
import { waitFor } from '../../src/kube/wait-for.ts';
import { type ManagedProcess, startProcess } from '../processes.ts';
import { cniPluginDir, kubeBinary, kubeRouterBinary, nodeBinary } from '../toolchain.ts';
import { createCgroup, joinCgroupScript, killCgroup, removeCgroup } from './cgroups.ts';
import type { HostNetwork } from './host-network.ts';
import { seedContainerdRoot } from './image-store.ts';
import { enforcerArgs, enforcerForwardChain, enforcerUser } from './network-policy.ts';
import {
  cniConfig,
  cniConfigDir,
  configDir,
  containerdConfig,
  containerdSocket,
  kubeconfig,
  kubeletConfig,
  kubeProxyConfig,
  type NodePlan,
  registryHosts,
  registryHostsDir,
} from './node-config.ts';

export interface LocalNodeOptions {
  name: string;
  index: number;
  clusterRoot: string;
  network: HostNetwork;
  /** The API server's URL as nodes reach it. */
  server: string;
  ca: CertificateAuthority;
  labels?: Record<string, string>;
  pauseImage: string;
  /** A containerd root holding the project's images (image-store.ts), the node's starting state. */
  imageStore: string;
  /** Plain-HTTP registries (host:port) the node pulls from. */
  registries?: string[];
}

const run = promisify(execFile);
/** Paths the node's mount namespace replaces; a cluster root below them would be hidden. */
const nodePaths = ['/var/lib', '/var/log', '/run'];

export class LocalNode {
  readonly name: string;
  readonly index: number;
  /** The node's file system on this machine: <dir>/var/lib is the node's /var/lib. */
  readonly dir: string;
  readonly address: string;
  readonly netns: string;
  readonly cgroup: string;
  private readonly options: LocalNodeOptions;
  private readonly logDir: string;
  private holder?: ManagedProcess;
  private processes: ManagedProcess[] = [];
  private enforcer?: ManagedProcess;

  constructor(options: LocalNodeOptions) {
    this.options = options;
    this.name = options.name;
    this.index = options.index;
    this.dir = join(options.clusterRoot, 'nodes', options.name);
    const hidden = nodePaths.find((p) => this.dir === p || this.dir.startsWith(`${p}/`));
    if (hidden)
      throw new Error(`the local cluster's root cannot be under ${hidden}: each node mounts its own there`);
    const n = options.network.addressing.node(options.index);
    this.address = n.address;
    this.netns = n.netns;
    this.cgroup = `kvpool/${options.network.addressing.slot}/${options.name}`;
    this.logDir = join(options.clusterRoot, 'logs', options.name);
  }

  get plan(): NodePlan {
    const a = this.options.network.addressing;
    return {
      name: this.name,
      address: this.address,
      dir: this.dir,
      cgroupRoot: `/${this.cgroup}`,
      clusterCidr: a.clusterCidr,
      clusterDns: a.dnsServiceIp,
      pauseImage: this.options.pauseImage,
      registries: this.options.registries,
      binaries: { runc: process.env.KVPOOL_RUNC ?? nodeBinary('runc'), cniPlugins: cniPluginDir() },
    };
  }

  private async writeConfig(): Promise<void> {
    const plan = this.plan;
    const dir = configDir(plan);
    for (const d of [dir, cniConfigDir(plan), join(this.dir, 'var/lib'), join(this.dir, 'var/log')]) {
      mkdirSync(d, { recursive: true });
    }
    const { ca, server } = this.options;
    const node = await ca.issue({
      commonName: `system:node:${this.name}`,
      organizations: ['system:nodes'],
      usage: 'client',
    });
    const serving = await ca.issue({
      commonName: this.name,
      hosts: [this.name, this.address],
      usage: 'server',
    });
    const proxy = await ca.issue({ commonName: 'system:kube-proxy', usage: 'client' });
    const enforcer = await ca.issue({ commonName: enforcerUser, usage: 'client' });
    const files: Record<string, string> = {
      'ca.crt': ca.certPem,
      'kubelet.crt': serving.certPem,
      'kubelet.key': serving.keyPem,
      'kubelet.kubeconfig': kubeconfig(server, ca.certPem, node.certPem, node.keyPem),
      'kube-proxy.kubeconfig': kubeconfig(server, ca.certPem, proxy.certPem, proxy.keyPem),
      'network-policy.kubeconfig': kubeconfig(server, ca.certPem, enforcer.certPem, enforcer.keyPem),
      'kubelet.yaml': kubeletConfig(plan),
      'kube-proxy.yaml': kubeProxyConfig(plan),
      'containerd.toml': containerdConfig(plan),
      'resolv.conf': '# the local cluster has no upstream resolver\n',
    };
    for (const [name, text] of Object.entries(files)) {
      writeFileSync(join(dir, name), text, {
        mode: name.endsWith('.key') || name.endsWith('kubeconfig') ? 0o600 : 0o644,
      });
    }
    for (const [registry, text] of Object.entries(registryHosts(plan))) {
      mkdirSync(join(registryHostsDir(plan), registry), { recursive: true });
      writeFileSync(join(registryHostsDir(plan), registry, 'hosts.toml'), text);
    }
  }

  /** Starts the node's namespaces and processes; resolves once the kubelet runs (not yet Ready). */
  async start(): Promise<void> {
    await this.writeConfig();
    const containerdRoot = join(this.dir, 'var/lib/containerd');
    if (!existsSync(containerdRoot)) await seedContainerdRoot(this.options.imageStore, containerdRoot);
    createCgroup(`${this.cgroup}/system`);
    await this.startHolder();
    const containerd = this.spawn('containerd', nodeBinary('containerd'), [
      '--config',
      join(configDir(this.plan), 'containerd.toml'),
      '--log-level',
      'warn',
    ]);
    await waitFor(
      async () => {
        containerd.assertRunning();
        return (await this.exec(['ctr', '--address', containerdSocket, 'version']).catch(() => undefined))
          ? true
          : undefined;
      },
      { what: `containerd of ${this.name} (log: ${containerd.logFile})`, timeoutMs: 60_000, intervalMs: 100 },
    );
    const dir = configDir(this.plan);
    const labels = Object.entries(this.options.labels ?? {}).map(([k, v]) => `${k}=${v}`);
    this.spawn('kubelet', kubeBinary('kubelet'), [
      `--config=${dir}/kubelet.yaml`,
      `--kubeconfig=${dir}/kubelet.kubeconfig`,
      `--hostname-override=${this.name}`,
      `--node-ip=${this.address}`,
      ...(labels.length ? [`--node-labels=${labels.join(',')}`] : []),
      '--v=1',
    ]);
    this.spawn('kube-proxy', kubeBinary('kube-proxy'), [`--config=${dir}/kube-proxy.yaml`, '--v=1']);
  }

  /**
   * Starts the node's NetworkPolicy enforcer (network-policy.ts) once the node is registered; resolves
   * when its chains are in the node's filter table. It runs until the node stops or is killed.
   */
  async enforceNetworkPolicies(): Promise<void> {
    if (this.enforcer) return;
    const kubeconfig = `${configDir(this.plan)}/network-policy.kubeconfig`;
    const args = enforcerArgs({ name: this.name, kubeconfig }, this.options.network.addressing.serviceCidr);
    const enforcer = this.spawn('network-policy', kubeRouterBinary(), args);
    this.enforcer = enforcer;
    await waitFor(
      async () => {
        enforcer.assertRunning();
        const chain = await this.exec(['iptables', '-S', enforcerForwardChain]).catch(() => undefined);
        return chain ? true : undefined;
      },
      { what: `the NetworkPolicy enforcer of ${this.name} (log: ${enforcer.logFile})`, timeoutMs: 60_000 },
    );
  }

  /** The node's mount namespace, held by a process that does nothing else. */
  private async startHolder(): Promise<void> {
    const ready = join(this.dir, '.mounts-ready');
    const script = [
      'set -e',
      joinCgroupScript(`${this.cgroup}/system`),
      `mount --bind '${this.dir}/var/lib' /var/lib`,
      `mount --bind '${this.dir}/var/log' /var/log`,
      'mount -t tmpfs -o mode=0755 tmpfs /run',
      `touch '${ready}'`,
      'exec sleep infinity',
    ].join('\n');
    rmSync(ready, { force: true });
    this.holder = startProcess(`${this.name}-namespace`, 'nsenter', {
      logDir: this.logDir,
      args: [
        `--net=/run/netns/${this.netns}`,
        '--',
        'unshare',
        '--mount',
        '--propagation',
        'private',
        '--',
        'sh',
        '-c',
        script,
      ],
    });
    const holder = this.holder;
    await waitFor(
      () => {
        holder.assertRunning();
        return existsSync(ready) ? true : undefined;
      },
      {
        what: `the mount namespace of ${this.name} (log: ${holder.logFile})`,
        timeoutMs: 10_000,
        intervalMs: 20,
      },
    );
  }

  /** Arguments that run a command inside the node's namespaces and cgroup. */
  private enter(command: string, args: string[]): string[] {
    if (!this.holder?.pid) throw new Error(`node ${this.name} is not running`);
    return [
      `--net=/run/netns/${this.netns}`,
      `--mount=/proc/${this.holder.pid}/ns/mnt`,
      '--',
      'sh',
      '-c',
      `${joinCgroupScript(`${this.cgroup}/system`)}; exec "$0" "$@"`,
      command,
      ...args,
    ];
  }

  private spawn(name: string, command: string, args: string[]): ManagedProcess {
    const proc = startProcess(`${this.name}-${name}`, 'nsenter', {
      logDir: this.logDir,
      args: this.enter(command, args),
      env: { ...process.env, PATH: `${join(nodeBinary('containerd'), '..')}:${process.env.PATH}` },
    });
    this.processes.push(proc);
    return proc;
  }

  /**
   * Runs a command on the node (`crictl`, `ctr` and the node's binaries by name) and returns its
   * output; rejects with its stderr.
   */
  async exec(argv: string[]): Promise<string> {
    const [command, ...args] = argv;
    const known: Record<string, string> = {
      ctr: nodeBinary('ctr'),
      crictl: nodeBinary('crictl'),
      runc: nodeBinary('runc'),
    };
    const resolved = known[command!] ?? command!;
    const extra = command === 'crictl' ? ['--runtime-endpoint', `unix://${containerdSocket}`] : [];
    try {
      const { stdout } = await run('nsenter', this.enter(resolved, [...extra, ...args]), {
        maxBuffer: 64 << 20,
      });
      return stdout;
    } catch (err) {
      const e = err as { stderr?: string; message: string };
      throw new Error(`${argv.join(' ')} on ${this.name}: ${e.stderr?.trim() || e.message}`);
    }
  }

  /** The main process (PID 1 of its namespace) of each running container of a Pod, through crictl. */
  async containerPids(namespace: string, pod: string): Promise<number[]> {
    const sandboxes = (
      await this.exec([
        'crictl',
        'pods',
        '-q',
        '--state',
        'ready',
        '--namespace',
        namespace,
        '--name',
        `^${pod}$`,
      ])
    )
      .split('\n')
      .filter(Boolean);
    const pids: number[] = [];
    for (const sandbox of sandboxes) {
      const containers = (await this.exec(['crictl', 'ps', '-q', '--state', 'running', '--pod', sandbox]))
        .split('\n')
        .filter(Boolean);
      for (const id of containers) {
        const info = JSON.parse(await this.exec(['crictl', 'inspect', '-o', 'json', id])) as {
          info?: { pid?: number };
        };
        if (info.info?.pid) pids.push(info.info.pid);
      }
    }
    return pids;
  }

  /** Writes the node's CNI network once its Pod range is known; the kubelet then turns Ready. */
  setPodCidr(podCidr: string): void {
    writeFileSync(join(cniConfigDir(this.plan), '10-kvpool.conflist'), cniConfig(podCidr));
    this.options.network.setPodCidr(this.index, podCidr);
  }

  /** The node dies: every process of it (kubelet, containerd, Pods' containers) is SIGKILLed. */
  async kill(): Promise<void> {
    await killCgroup(this.cgroup);
    await Promise.all([this.holder, ...this.processes].map((p) => p?.exited));
    this.processes = [];
    this.enforcer = undefined;
    this.holder = undefined;
  }

  /** Stops the node and removes its cgroup; its files stay. */
  async stop(): Promise<void> {
    for (const p of [...this.processes].reverse()) await p.stop(5000);
    await this.kill();
    await removeCgroup(this.cgroup);
  }
}
