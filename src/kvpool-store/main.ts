// `kvpool-store`: the program of the store image. `leader` campaigns for the store's Lease and runs
// mooncake_master while it holds it (or, with etcd, runs it at once and lets etcd elect); `member` runs a member, following the Lease when asked to.
// Everything after `--` goes verbatim to mooncake_master (leader) or the member service (member).
import { parseArgs } from 'node:util';
import { leaseTimingProblems, storeLeaseDefaults } from '../kube/lease-timing.ts';
import { log } from '../kube/log.ts';
import { parseTunnel } from './etcd-tunnel.ts';
import { type LeaseRef, parseLeaseRef } from './lease-address.ts';

const usage = `usage: kvpool-store <command> [flags] -- <store arguments>
  leader [flags] -- <mooncake_master flags>
      --election=Kubernetes|Etcd|None
                                   campaign for a Lease before serving (default Kubernetes); Etcd:
                                   run the master at once, etcd elects and the standbys follow its OpLog
      --lease=<namespace>/<name>   the Lease (required with --election=Kubernetes)
      --etcd-tunnel=<port>=https://<host>:<port>
                                   with Etcd, repeated: 127.0.0.1:<port> carries the master's etcd
                                   connections, in TLS, to that endpoint
      --etcd-tls-dir=<dir>         with Etcd: ca.crt, tls.crt and tls.key of the client certificate
      --probe-port=9004            /readyz and /healthz, on KUBERNETES_POD_IP
      --metrics-port=9005          GET /metrics alone, the master's, on KUBERNETES_POD_IP
      --policy-seed=<file>         tenant policy to start from, when the file exists
      --policy-file=<file>         where the master reads its tenant policy (seeded before it starts)
      --policy-seed-configmap=<namespace>/<name>
                                   with an election: the seed read from the API on winning the Lease;
                                   --policy-seed only if that read fails
      --lease-duration-ms=${storeLeaseDefaults.leaseDurationMs} --renew-deadline-ms=${storeLeaseDefaults.renewDeadlineMs} --retry-period-ms=${storeLeaseDefaults.retryPeriodMs}
  member [flags] -- <mc_store_rest_server arguments>
      --tier-status-port=<n>       GET /tier (FILE_WRITE_FAIL lines seen, the tier filesystem's size and
                                   free space) on MOONCAKE_LOCAL_HOSTNAME; needs MOONCAKE_OFFLOAD_FILE_STORAGE_PATH
      MOONCAKE_MASTER=k8s://<namespace>/<lease> follows the Lease holder; any other value passes through`;

class UsageError extends Error {}

function splitAtDashes(argv: string[]): [string[], string[]] {
  const at = argv.indexOf('--');
  return at < 0 ? [argv, []] : [argv.slice(0, at), argv.slice(at + 1)];
}

function positiveInt(name: string, raw: string): number {
  const value = Number(raw);
  if (!Number.isInteger(value) || value <= 0)
    throw new UsageError(`--${name}=${raw}: give a positive integer`);
  return value;
}

function objectFlag(flag: string, raw: string | undefined): LeaseRef | undefined {
  if (raw === undefined) return undefined;
  const ref = parseLeaseRef(raw);
  if (!ref) throw new UsageError(`--${flag}=${raw}: give <namespace>/<name>`);
  return ref;
}

function leaseFlag(raw: string | undefined, election: string): LeaseRef | undefined {
  if (raw === undefined && election === 'Kubernetes')
    throw new UsageError('--election=Kubernetes needs --lease=<namespace>/<name>');
  return objectFlag('lease', raw);
}

async function leader(flags: string[], masterArgs: string[]): Promise<number> {
  const { values } = parseArgs({
    args: flags,
    options: {
      election: { type: 'string', default: 'Kubernetes' },
      lease: { type: 'string' },
      'probe-port': { type: 'string', default: '9004' },
      'metrics-port': { type: 'string', default: '9005' },
      'policy-seed': { type: 'string' },
      'policy-file': { type: 'string' },
      'policy-seed-configmap': { type: 'string' },
      'lease-duration-ms': { type: 'string', default: String(storeLeaseDefaults.leaseDurationMs) },
      'renew-deadline-ms': { type: 'string', default: String(storeLeaseDefaults.renewDeadlineMs) },
      'retry-period-ms': { type: 'string', default: String(storeLeaseDefaults.retryPeriodMs) },
      'etcd-tunnel': { type: 'string', multiple: true },
      'etcd-tls-dir': { type: 'string' },
    },
  });
  const election = values.election;
  if (election !== 'Kubernetes' && election !== 'Etcd' && election !== 'None') {
    throw new UsageError(`--election=${election}: give Kubernetes, Etcd or None`);
  }
  const etcd = etcdFlags(election, values['etcd-tunnel'] ?? [], values['etcd-tls-dir']);
  if (election === 'Kubernetes' && !process.env.KUBERNETES_POD_IP) {
    throw new UsageError(
      '--election=Kubernetes needs KUBERNETES_POD_IP: the Lease names <pod IP>:<rpc port>',
    );
  }
  const timings = {
    leaseDurationMs: positiveInt('lease-duration-ms', values['lease-duration-ms']),
    renewDeadlineMs: positiveInt('renew-deadline-ms', values['renew-deadline-ms']),
    retryPeriodMs: positiveInt('retry-period-ms', values['retry-period-ms']),
  };
  const problems = leaseTimingProblems(timings);
  if (problems.length) {
    throw new UsageError(
      `--lease-duration-ms=${timings.leaseDurationMs} --renew-deadline-ms=${timings.renewDeadlineMs} --retry-period-ms=${timings.retryPeriodMs}: ${problems.join('; ')}`,
    );
  }
  const { runLeader } = await import('./leader.ts');
  return runLeader({
    election,
    lease: leaseFlag(values.lease, election),
    probePort: positiveInt('probe-port', values['probe-port']),
    metricsPort: positiveInt('metrics-port', values['metrics-port']),
    policySeed: values['policy-seed'],
    policyFile: values['policy-file'],
    policySeedConfigMap: objectFlag('policy-seed-configmap', values['policy-seed-configmap']),
    ...timings,
    ...etcd,
    masterArgs,
  });
}

function etcdFlags(election: string, tunnels: string[], tlsDir: string | undefined) {
  if (election !== 'Etcd') {
    if (tunnels.length || tlsDir)
      throw new UsageError('--etcd-tunnel and --etcd-tls-dir need --election=Etcd');
    return {};
  }
  if (!tunnels.length || !tlsDir)
    throw new UsageError(
      '--election=Etcd needs --etcd-tunnel=<port>=https://<host>:<port> and --etcd-tls-dir=<dir>',
    );
  const etcdTunnels = tunnels.map((t) => {
    const spec = parseTunnel(t);
    if (!spec) throw new UsageError(`--etcd-tunnel=${t}: give <local port>=https://<host>:<port>`);
    return spec;
  });
  return { etcdTunnels, etcdTlsDir: tlsDir };
}

async function member(flags: string[], memberArgs: string[]): Promise<number> {
  const { values } = parseArgs({ args: flags, options: { 'tier-status-port': { type: 'string' } } });
  const port = values['tier-status-port'];
  if (port !== undefined && !process.env.MOONCAKE_OFFLOAD_FILE_STORAGE_PATH)
    throw new UsageError(
      `--tier-status-port=${port}: the member has no tier (MOONCAKE_OFFLOAD_FILE_STORAGE_PATH is unset); set it, or drop the flag`,
    );
  const { runMember } = await import('./member.ts');
  return runMember(memberArgs, process.env, {
    ...(port !== undefined ? { tierStatusPort: positiveInt('tier-status-port', port) } : {}),
  });
}

async function main(argv: string[]): Promise<number> {
  const [head, passthrough] = splitAtDashes(argv);
  const [command, ...flags] = head;
  try {
    if (command === 'leader') return await leader(flags, passthrough);
    if (command === 'member') return await member(flags, passthrough);
    console.error(usage);
    return command ? 2 : 0;
  } catch (err) {
    if (err instanceof UsageError || (err as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) {
      console.error(`kvpool-store: ${(err as Error).message}\n\n${usage}`);
      return 2;
    }
    log.error({ program: 'kvpool-store', err: (err as Error).message }, 'kvpool-store failed');
    return 1;
  }
}

// Exit explicitly: background polls (Lease, master health) would otherwise keep the process alive.
process.exit(await main(process.argv.slice(2)));
