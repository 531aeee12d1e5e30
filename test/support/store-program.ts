// Runs `kvpool-store` (leader and member) as real child processes against the shared control plane and
// the real Mooncake binaries, each "Pod" on its own loopback address, as the store image would run it.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { projectRoot } from '../../images/toolchain.ts';
import { freePort } from '../../local/ports.ts';
import { type ManagedProcess, startProcess } from '../../local/processes.ts';
import { mooncakeVenv } from '../../local/toolchain.ts';
import { testKubeconfig } from './cluster.ts';

const program = join(projectRoot, 'src', 'kvpool-store', 'main.ts');

export interface StorePod {
  name: string;
  namespace: string;
  ip: string;
}

export interface StoreLeader {
  pod: StorePod;
  rpcPort: number;
  adminUrl: string;
  probeUrl: string;
  /** The read-only /metrics the program serves from the master's. */
  metricsUrl: string;
  /** What the leader writes into the Lease: `<pod IP>:<rpc port>`. */
  identity: string;
  process: ManagedProcess;
}

export interface StoreMember {
  pod: StorePod;
  restPort: number;
  process: ManagedProcess;
}

/** The environment a store container gets: the wheel's binaries first on PATH, the Pod's identity. */
function podEnv(pod: StorePod, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  return {
    ...process.env,
    PATH: `${join(mooncakeVenv(), 'bin')}:${process.env.PATH}`,
    // A leader elected by etcd, and a member addressed by Service, never reach the API.
    KUBECONFIG: extra.KUBECONFIG ?? testKubeconfig(),
    KUBERNETES_POD_NAME: pod.name,
    KUBERNETES_POD_NAMESPACE: pod.namespace,
    KUBERNETES_POD_IP: pod.ip,
    KVPOOL_LOG_LEVEL: 'info',
    ...extra,
  };
}

export interface LeaderStart {
  pod: StorePod;
  /** kvpool-store's own flags (election, lease, policy, timings); the probe and metrics ports are added. */
  flags: string[];
  /** Extra mooncake_master flags after the addresses and ports. */
  masterArgs?: string[];
  logDir: string;
  /** The kubeconfig the process reaches the API with (a relay's, to inject an outage); the test cluster's by default. */
  kubeconfig?: string;
}

export async function startStoreLeader(options: LeaderStart): Promise<StoreLeader> {
  const { pod } = options;
  const [rpcPort, adminPort, probePort, metricsPort] = [
    await freePort(pod.ip),
    await freePort(pod.ip),
    await freePort(pod.ip),
    await freePort(pod.ip),
  ];
  const masterArgs = [
    `-rpc_port=${rpcPort}`,
    `-metrics_port=${adminPort}`,
    `-rpc_address=${pod.ip}`,
    `-metrics_host=${pod.ip}`,
    '-enable_metric_reporting=false',
    ...(options.masterArgs ?? []),
  ];
  const child = startProcess(`leader-${pod.name}`, process.execPath, {
    logDir: options.logDir,
    args: [
      program,
      'leader',
      ...options.flags,
      `--probe-port=${probePort}`,
      `--metrics-port=${metricsPort}`,
      '--',
      ...masterArgs,
    ],
    env: podEnv(pod, options.kubeconfig ? { KUBECONFIG: options.kubeconfig } : {}),
  });
  return {
    pod,
    rpcPort,
    adminUrl: `http://${pod.ip}:${adminPort}`,
    probeUrl: `http://${pod.ip}:${probePort}`,
    metricsUrl: `http://${pod.ip}:${metricsPort}`,
    identity: `${pod.ip}:${rpcPort}`,
    process: child,
  };
}

export interface MemberStart {
  pod: StorePod;
  /** MOONCAKE_MASTER as the renderer sets it: `k8s://<ns>/<lease>` or `host:port`. */
  master: string;
  segmentBytes: number;
  logDir: string;
  /** kvpool-store's own member flags (before `--`). */
  flags?: string[];
  /** More of the container's environment (a disk tier's MOONCAKE_OFFLOAD_*). */
  env?: Record<string, string>;
}

export async function startStoreMember(options: MemberStart): Promise<StoreMember> {
  const { pod } = options;
  const restPort = await freePort(pod.ip);
  const child = startProcess(`member-${pod.name}`, process.execPath, {
    logDir: options.logDir,
    args: [program, 'member', ...(options.flags ?? []), '--', '--port', String(restPort)],
    env: podEnv(pod, {
      MOONCAKE_MASTER: options.master,
      MOONCAKE_TE_META_DATA_SERVER: 'P2PHANDSHAKE',
      MOONCAKE_PROTOCOL: 'tcp',
      MOONCAKE_LOCAL_HOSTNAME: pod.ip,
      MOONCAKE_GLOBAL_SEGMENT_SIZE: String(options.segmentBytes),
      MOONCAKE_LOCAL_BUFFER_SIZE: '0',
      MC_TE_METRIC: '1',
      ...options.env,
    }),
  });
  return { pod, restPort, process: child };
}

/** GET a probe path: status and the one-line reason. */
export async function probe(leader: StoreLeader, path: '/readyz' | '/healthz') {
  const res = await fetch(`${leader.probeUrl}${path}`, { signal: AbortSignal.timeout(2000) });
  return { status: res.status, reason: (await res.text()).trim() };
}

/** One unlabelled (or labelled) Prometheus sample from the master, or undefined when absent. */
export async function masterMetric(leader: StoreLeader, sample: string): Promise<number | undefined> {
  const res = await fetch(`${leader.adminUrl}/metrics`, { signal: AbortSignal.timeout(2000) });
  const line = (await res.text()).split('\n').find((l) => l.startsWith(`${sample} `));
  return line === undefined ? undefined : Number(line.slice(sample.length + 1));
}

/** Whether the master's admin port answers at all. */
export async function adminAnswers(leader: StoreLeader): Promise<boolean> {
  try {
    await fetch(`${leader.adminUrl}/health`, { signal: AbortSignal.timeout(1000) });
    return true;
  } catch {
    return false;
  }
}

/** The PID of the mooncake_master a leader process runs, or undefined while it runs none. */
export function masterPid(leader: StoreLeader): number | undefined {
  return childProcessList(leader.process.pid!).find((c) => c.cmdline.includes('mooncake_master'))?.pid;
}

/** Direct children of a process (from /proc), e.g. whether a standby started a master. */
export function childProcesses(pid: number): string[] {
  return childProcessList(pid).map((c) => c.cmdline);
}

function childProcessList(pid: number): { pid: number; cmdline: string }[] {
  const found: { pid: number; cmdline: string }[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === pid)
        found.push({
          pid: Number(entry),
          cmdline: readFileSync(`/proc/${entry}/cmdline`, 'utf8').replaceAll('\0', ' ').trim(),
        });
    } catch {
      // Exited meanwhile.
    }
  }
  return found;
}
