// `kvpool-store leader`: campaigns for the store's Lease, and only as the holder labels its Pod, seeds
// the tenant policy and runs mooncake_master. Losing the Lease kills the master at once: two masters
// must never serve one store. See docs/store-program.md.
import { setTimeout as sleep } from 'node:timers/promises';
import { KubeClient } from '../kube/client.ts';
import { LeaderElector } from '../kube/leader-election.ts';
import { type Logger, log } from '../kube/log.ts';
import { Child, describeExit, findOnPath } from './child.ts';
import { LeaderStatus } from './leader-status.ts';
import type { LeaseRef } from './lease-address.ts';
import { masterEndpoints } from './master-flags.ts';
import { MasterHealth } from './master-health.ts';
import { type PodIdentity, podFromEnv, setPodRole } from './pod-role-label.ts';
import { startProbeServer } from './probe-server.ts';
import { shutdownRequested } from './shutdown.ts';
import { seedTenantPolicy } from './tenant-policy-seed.ts';

export interface LeaderOptions {
  election: 'Kubernetes' | 'None';
  lease: LeaseRef | undefined;
  probePort: number;
  policySeed: string | undefined;
  policyFile: string | undefined;
  leaseDurationMs: number;
  renewDeadlineMs: number;
  retryPeriodMs: number;
  masterArgs: string[];
}

const masterStopGraceMs = 10_000;

type Ending = 'lost' | 'taken' | 'master-exited' | 'signal';

interface Run {
  options: LeaderOptions;
  masterPath: string;
  pod: PodIdentity;
  status: LeaderStatus;
  shutdown: Promise<NodeJS.Signals>;
  logger: Logger;
}

/** Runs a leader replica to its end and returns the process exit code. */
export async function runLeader(options: LeaderOptions, pod = podFromEnv()): Promise<number> {
  const lease = options.lease ? `${options.lease.namespace}/${options.lease.name}` : undefined;
  const elected = options.election === 'Kubernetes';
  const run: Run = {
    options,
    // Resolved up front: a missing binary is found before this replica takes the Lease.
    masterPath: findOnPath('mooncake_master'),
    pod,
    status: new LeaderStatus(elected ? lease : undefined),
    shutdown: shutdownRequested(),
    logger: log.child({ program: 'kvpool-store', role: 'leader', ...(elected ? { lease } : {}) }),
  };
  const probe = await startProbeServer(pod.ip ?? '0.0.0.0', options.probePort, run.status.checks);
  run.logger.info({ port: probe.port }, 'probe server listening');
  try {
    return elected ? await runElected(run) : await runUnelected(run);
  } finally {
    run.status.health?.stop();
    await probe.close();
  }
}

async function runUnelected(run: Run): Promise<number> {
  if (!seedPolicy(run)) return 1;
  const master = startMaster(run);
  const ending: Ending = await Promise.race([
    master.exited.then(() => 'master-exited' as const),
    run.shutdown.then(() => 'signal' as const),
  ]);
  if (ending === 'master-exited') return masterExited(run, master);
  await stopMaster(run, master);
  return 0;
}

async function runElected(run: Run): Promise<number> {
  const { options, pod, logger } = run;
  if (!options.lease) throw new Error('--election=Kubernetes needs --lease=<namespace>/<name>');
  if (!pod.ip) throw new Error('--election=Kubernetes needs KUBERNETES_POD_IP (the identity members dial)');
  const identity = `${pod.ip}:${masterEndpoints(options.masterArgs).rpcPort}`;
  const client = await KubeClient.fromDefault();
  const elector = new LeaderElector(client, { ...options.lease, identity, ...electionTimings(options) });
  // A container restarted after losing the Lease must not keep its old leader label.
  await setPodRole(client, pod, null, logger);
  logger.info({ identity }, 'campaigning for the Lease');
  if (!(await campaign(run, elector))) {
    await elector.release();
    return 0;
  }
  await setPodRole(client, pod, 'leader', logger);
  run.status.phase = 'seeding';
  if (!seedPolicy(run)) {
    await elector.release();
    return 1;
  }
  const master = startMaster(run);
  const ending: Ending = await Promise.race([
    elector.renewUntilLost().then((r) => (r === 'lost' ? ('lost' as const) : new Promise<never>(() => {}))),
    otherHolder(elector, identity, options.retryPeriodMs).then(() => 'taken' as const),
    master.exited.then(() => 'master-exited' as const),
    run.shutdown.then(() => 'signal' as const),
  ]);
  return endLeadership(run, ending, master, elector, client);
}

function electionTimings(options: LeaderOptions) {
  const { leaseDurationMs, renewDeadlineMs, retryPeriodMs } = options;
  return { leaseDurationMs, renewDeadlineMs, retryPeriodMs };
}

/** Campaigns until this replica holds the Lease (true) or a shutdown signal arrives (false). */
async function campaign(run: Run, elector: LeaderElector): Promise<boolean> {
  let campaigning = true;
  // The holder is only for the readiness reason, taken from the elector's own reads.
  void (async () => {
    while (campaigning) {
      run.status.holder = elector.observedHolder ?? run.status.holder;
      await sleep(Math.min(500, run.options.retryPeriodMs));
    }
  })();
  const won = await Promise.race([elector.acquire(), run.shutdown.then(() => false)]);
  campaigning = false;
  return won;
}

/**
 * Resolves once a renewal read another holder: someone took the Lease while this replica led. Sooner
 * than the renew deadline, which only counts failed renewals.
 */
async function otherHolder(elector: LeaderElector, identity: string, intervalMs: number) {
  for (;;) {
    await sleep(intervalMs);
    const holder = elector.observedHolder;
    if (holder && holder !== identity) return holder;
  }
}

async function endLeadership(
  run: Run,
  ending: Ending,
  master: Child,
  elector: LeaderElector,
  client: KubeClient,
): Promise<number> {
  const { logger } = run;
  switch (ending) {
    case 'lost':
    case 'taken':
      // Another replica may already serve: this master must not answer a single request more.
      master.signal('SIGKILL');
      await master.exited;
      logger.error({ why: ending }, 'lost the Lease; killed mooncake_master');
      return 1;
    case 'master-exited':
      await elector.release();
      await setPodRole(client, run.pod, null, logger);
      return masterExited(run, master);
    case 'signal':
      await stopMaster(run, master);
      await elector.release();
      await setPodRole(client, run.pod, null, logger);
      return 0;
  }
}

/** Writes the master's tenant policy; false (after logging why) when a seed exists but cannot be copied. */
function seedPolicy(run: Run): boolean {
  const { policySeed, policyFile } = run.options;
  if (!policyFile) return true;
  try {
    const from = seedTenantPolicy(policySeed, policyFile);
    run.logger.info({ policyFile, from }, 'seeded the tenant policy');
    return true;
  } catch (err) {
    run.logger.error(
      { err: (err as Error).message },
      'could not seed the tenant policy; not starting the master',
    );
    return false;
  }
}

function startMaster(run: Run): Child {
  const { options, pod, status, logger } = run;
  const endpoints = masterEndpoints(options.masterArgs);
  const master = new Child('mooncake_master', run.masterPath, options.masterArgs, process.env);
  const host = endpoints.metricsHost ?? pod.ip ?? '127.0.0.1';
  const health = new MasterHealth(`${host.includes(':') ? `[${host}]` : host}:${endpoints.metricsPort}`);
  void health.run();
  status.master = master;
  status.health = health;
  status.phase = 'running';
  logger.info({ pid: master.pid, args: options.masterArgs }, 'started mooncake_master');
  return master;
}

async function stopMaster(run: Run, master: Child): Promise<void> {
  run.status.phase = 'stopping';
  run.logger.info('stopping mooncake_master');
  const exit = await master.stop(masterStopGraceMs);
  run.logger.info({ exit: describeExit(exit) }, 'mooncake_master stopped');
}

async function masterExited(run: Run, master: Child): Promise<number> {
  const exit = await master.exited;
  run.logger.error({ exit: describeExit(exit) }, 'mooncake_master exited on its own');
  return exit.code && exit.code > 0 ? exit.code : 1;
}
