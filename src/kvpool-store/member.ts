// `kvpool-store member`: runs the wheel's member service (through member_bootstrap.py, which binds its
// REST port to MOONCAKE_LOCAL_HOSTNAME). With MOONCAKE_MASTER=k8s://<namespace>/<lease> it follows the
// Lease: the member is (re)started pointed at whoever holds it. See docs/store-program.md.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { KubeClient } from '../kube/client.ts';
import { type Logger, log } from '../kube/log.ts';
import { shutdownRequested } from '../kube/shutdown.ts';
import { Child, describeExit, findOnPath } from './child.ts';
import { type LeaseRef, leaseOfMasterAddress, readLeaseHolder } from './lease-address.ts';
import { startTierStatusServer, TierStatus } from './tier-status.ts';

const leasePollMs = 500;
const terminationLog = '/dev/termination-log';
// The old master is gone when the holder changes, and the wheel sometimes hangs shutting down without it:
// a short grace keeps the re-pointing gap small (nothing of value is lost; the new master is empty).
const restartGraceMs = 2_000;
// Without a member running, this many failed Lease reads in a row (10 s) end the program (RBAC, API down).
const maxLeaseReadFailures = 20;

type StartMember = (master: string | undefined) => Child;

interface Run {
  start: StartMember;
  shutdown: Promise<NodeJS.Signals>;
  shuttingDown: boolean;
  logger: Logger;
}

export interface MemberOptions {
  /** Serve GET /tier (decision 39) on MOONCAKE_LOCAL_HOSTNAME at this port; the tier is MOONCAKE_OFFLOAD_FILE_STORAGE_PATH. */
  tierStatusPort?: number;
}

/** Runs a member to its end and returns the process exit code. */
export async function runMember(
  args: string[],
  env: NodeJS.ProcessEnv = process.env,
  options: MemberOptions = {},
): Promise<number> {
  const python = findOnPath('python3');
  const bootstrap = join(import.meta.dirname, 'member_bootstrap.py');
  const lease = leaseOfMasterAddress(env.MOONCAKE_MASTER);
  const logger = log.child({ program: 'kvpool-store', role: 'member' });
  const tier = await tierStatusOf(env, options, logger);
  const start: StartMember = (master) => {
    const fatal = fatalConfigurationWatch(logger, () => child);
    const child: Child = new Child(
      'member',
      python,
      [bootstrap, ...args],
      master ? { ...env, MOONCAKE_MASTER: master } : env,
      tier
        ? (line) => {
            fatal(line);
            tier.see(line);
          }
        : fatal,
    );
    logger.info(
      { pid: child.pid, master: master ?? env.MOONCAKE_MASTER, args },
      'started the member service',
    );
    return child;
  };
  const run: Run = { start, shutdown: shutdownRequested(), shuttingDown: false, logger };
  void run.shutdown.then(() => {
    run.shuttingDown = true;
  });
  return lease ? runFollowingLease(run, lease) : runDirect(run);
}

/** The tier's status and its server, when asked for; kept across member restarts (a Lease change). */
async function tierStatusOf(
  env: NodeJS.ProcessEnv,
  options: MemberOptions,
  logger: Logger,
): Promise<TierStatus | undefined> {
  if (options.tierStatusPort === undefined) return undefined;
  const path = env.MOONCAKE_OFFLOAD_FILE_STORAGE_PATH;
  const host = env.MOONCAKE_LOCAL_HOSTNAME;
  if (!path || !host)
    throw new Error(
      '--tier-status-port needs MOONCAKE_OFFLOAD_FILE_STORAGE_PATH (the tier) and MOONCAKE_LOCAL_HOSTNAME (the address to serve on): set both, or drop the flag',
    );
  const status = new TierStatus(path);
  try {
    const server = await startTierStatusServer(host, options.tierStatusPort, status);
    logger.info({ address: `${host}:${server.port}`, path }, 'serving the tier’s status on GET /tier');
  } catch (err) {
    // The store is what matters: it runs without the report, which the operator then shows as
    // TierWritable=Unknown naming this member and the address it could not read.
    logger.warn(
      { address: `${host}:${options.tierStatusPort}`, err: (err as Error).message },
      'could not serve the tier’s status; the member runs without it',
    );
  }
  return status;
}

async function runDirect(run: Run): Promise<number> {
  const child = run.start(undefined);
  const ending = await Promise.race([
    child.exited.then(() => 'exited' as const),
    run.shutdown.then(() => 'signal' as const),
  ]);
  return ending === 'signal' ? forwardShutdown(run, child) : childDied(run, child);
}

/** Starts the member at the Lease holder and restarts it whenever the holder changes. */
async function runFollowingLease(run: Run, lease: LeaseRef): Promise<number> {
  const client = await KubeClient.fromDefault();
  const reader = new HolderReader(client, lease, run.logger);
  let child: Child | undefined;
  let master = '';
  let waitLogged = false;
  for (;;) {
    const holder = await reader.read();
    if (holder === undefined && !child && reader.failures >= maxLeaseReadFailures) {
      run.logger.error({ failures: reader.failures }, 'cannot read the Lease (RBAC? API?); giving up');
      return 1;
    }
    if (holder && holder !== master) {
      if (child) child = await stopForRestart(run, child, master, holder);
      if (run.shuttingDown) return 0;
      master = holder;
      child = run.start(holder);
    } else if (holder === '' && !child && !waitLogged) {
      run.logger.info({ lease: `${lease.namespace}/${lease.name}` }, 'the Lease has no holder yet; waiting');
      waitLogged = true;
    }
    const ending = await Promise.race([
      sleep(leasePollMs).then(() => 'tick' as const),
      ...(child ? [child.exited.then(() => 'exited' as const)] : []),
      run.shutdown.then(() => 'signal' as const),
    ]);
    if (ending === 'signal') return child ? forwardShutdown(run, child) : 0;
    if (ending === 'exited') return childDied(run, child!);
  }
}

async function stopForRestart(run: Run, child: Child, from: string, to: string): Promise<undefined> {
  run.logger.info({ from, to }, 'the Lease holder changed; restarting the member service');
  const exit = await child.stop(restartGraceMs);
  run.logger.info({ exit: describeExit(exit) }, 'the member service stopped for the restart');
  return undefined;
}

/** Reads the holder, logging failures once per distinct error; undefined when the read failed. */
class HolderReader {
  failures = 0;
  private readonly client: KubeClient;
  private readonly lease: LeaseRef;
  private readonly logger: Logger;
  private lastError = '';

  constructor(client: KubeClient, lease: LeaseRef, logger: Logger) {
    this.client = client;
    this.lease = lease;
    this.logger = logger;
  }

  async read(): Promise<string | undefined> {
    try {
      const holder = await readLeaseHolder(this.client, this.lease);
      this.failures = 0;
      this.lastError = '';
      return holder;
    } catch (err) {
      this.failures += 1;
      const message = String(err);
      if (message !== this.lastError) this.logger.warn({ err: message }, 'could not read the Lease');
      this.lastError = message;
      return undefined;
    }
  }
}

async function forwardShutdown(run: Run, child: Child): Promise<number> {
  child.signal('SIGTERM');
  const exit = await child.exited;
  run.logger.info({ exit: describeExit(exit) }, 'the member service stopped');
  return 0;
}

/**
 * The member service retries a tier directory it cannot use for a minute before giving up, with the
 * reason only in its log. This ends it at the first such error and leaves the store's own line as the
 * container's termination message, so the Pod (and the backend's MembersMounted) says why at once.
 */
function fatalConfigurationWatch(logger: Logger, child: () => Child): (line: string) => void {
  let stopped = false;
  return (line) => {
    const m = /(FileStorageConfig: .*)$/.exec(line);
    if (!m || stopped) return;
    stopped = true;
    try {
      writeFileSync(terminationLog, m[1]!);
    } catch {
      // Outside a container there is no termination log; the line is in the output anyway.
    }
    logger.error({ reason: m[1] }, 'the member cannot use its configuration; stopping');
    child().signal('SIGKILL');
  };
}

async function childDied(run: Run, child: Child): Promise<number> {
  const exit = await child.exited;
  run.logger.error({ exit: describeExit(exit) }, 'the member service exited on its own');
  return exit.code && exit.code > 0 ? exit.code : 1;
}
