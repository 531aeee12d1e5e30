// `kvpool-store leader`: campaigns for the store's Lease, and only as the holder seeds the tenant
// policy and runs mooncake_master (with etcd: runs it at once, and etcd elects among the masters). Leading ends at the renew deadline after the last successful
// renewal (on this process's monotonic clock): then the master is killed at once and the replica
// campaigns again, so two masters never serve one store while an API outage shorter than that deadline
// costs nothing. See docs/store-program.md.
import { KubeClient } from '../kube/client.ts';
import { hostPort } from '../kube/host-port.ts';
import { asksToStepDown, LeaderElector, type TermEnd } from '../kube/leader-election.ts';
import { type Logger, log } from '../kube/log.ts';
import { shutdownRequested } from '../kube/shutdown.ts';
import { Child, describeExit, findOnPath } from './child.ts';
import { openTunnels, readClientTls, type TunnelSpec } from './etcd-tunnel.ts';
import { LeaderStatus } from './leader-status.ts';
import type { LeaseRef } from './lease-address.ts';
import { masterEndpoints } from './master-flags.ts';
import { MasterHealth } from './master-health.ts';
import { startMetricsProxy } from './metrics-proxy.ts';
import { type PodIdentity, podFromEnv } from './pod-identity.ts';
import { startProbeServer } from './probe-server.ts';
import { readSeedConfigMap } from './seed-configmap.ts';
import { StepDownRequests } from './step-down.ts';
import { policyFromApi, seedTenantPolicy, writeTenantPolicy } from './tenant-policy-seed.ts';

export interface LeaderOptions {
  election: 'Kubernetes' | 'Etcd' | 'None';
  lease: LeaseRef | undefined;
  probePort: number;
  /** GET /metrics alone, read from the master: what a scraper may reach instead of the admin port. */
  metricsPort: number;
  policySeed: string | undefined;
  policyFile: string | undefined;
  /** The seed ConfigMap, read from the API as this replica wins the Lease; the mounted seed if that fails. */
  policySeedConfigMap: LeaseRef | undefined;
  leaseDurationMs: number;
  renewDeadlineMs: number;
  retryPeriodMs: number;
  /** With Etcd: the TLS tunnels the master reaches etcd through, and their client certificate. */
  etcdTunnels?: TunnelSpec[];
  etcdTlsDir?: string;
  masterArgs: string[];
}

const masterStopGraceMs = 10_000;

type Ending = TermEnd | 'master-exited' | 'signal';

interface Run {
  options: LeaderOptions;
  masterPath: string;
  pod: PodIdentity;
  status: LeaderStatus;
  shutdown: Promise<NodeJS.Signals>;
  /** With an etcd election: the operator's requests that this replica hand over. */
  stepDowns: StepDownRequests;
  logger: Logger;
}

/** The seed's read from the API is abandoned after this: the Lease goes unrenewed until the master starts. */
const seedReadMs = (o: Pick<LeaderOptions, 'renewDeadlineMs'>) => Math.min(2000, o.renewDeadlineMs / 2);

/** Runs a leader replica to its end and returns the process exit code. */
export async function runLeader(options: LeaderOptions, pod = podFromEnv()): Promise<number> {
  const lease = options.lease ? `${options.lease.namespace}/${options.lease.name}` : undefined;
  const elected = options.election === 'Kubernetes';
  const run: Run = {
    stepDowns: new StepDownRequests(),
    options,
    // Resolved up front: a missing binary is found before this replica takes the Lease.
    masterPath: findOnPath('mooncake_master'),
    pod,
    status: new LeaderStatus(elected ? lease : undefined, options.election === 'Etcd'),
    shutdown: shutdownRequested(),
    logger: log.child({ program: 'kvpool-store', role: 'leader', ...(elected ? { lease } : {}) }),
  };
  const checks = {
    ...run.status.checks,
    ...(options.election === 'Etcd'
      ? {
          stepDown: (seconds: number) => {
            run.stepDowns.ask(seconds);
            return {
              ok: true,
              reason: `stepping down for ${seconds} s: the master stops and etcd elects a standby`,
            };
          },
        }
      : {}),
  };
  const probe = await startProbeServer(pod.ip ?? '0.0.0.0', options.probePort, checks);
  run.logger.info({ port: probe.port }, 'probe server listening');
  const metrics = await startMetricsProxy(pod.ip ?? '0.0.0.0', options.metricsPort, masterAdmin(run));
  run.logger.info({ port: metrics.port }, 'metrics proxy listening');
  try {
    if (options.election === 'Etcd') return await runEtcdElected(run);
    return elected ? await runElected(run) : await runUnelected(run);
  } finally {
    run.status.health?.stop();
    await Promise.all([probe.close(), metrics.close()]);
  }
}

/** The master's admin endpoint, `host:port`, as its flags set it. */
function masterAdmin(run: Pick<Run, 'options' | 'pod'>): string {
  const endpoints = masterEndpoints(run.options.masterArgs);
  const host = endpoints.metricsHost ?? run.pod.ip ?? '127.0.0.1';
  return hostPort(host, endpoints.metricsPort);
}

async function runUnelected(run: Run): Promise<number> {
  if (!(await seedPolicy(run))) return 1;
  const master = startMaster(run);
  const ending = await Promise.race([
    master.exited.then(() => 'master-exited' as const),
    run.shutdown.then(() => 'signal' as const),
  ]);
  if (ending === 'master-exited') return masterExited(run, master);
  await stopMaster(run, master, masterStopGraceMs);
  return 0;
}

/**
 * etcd elects: every replica runs its master at once; etcd's view names the serving one, which writes
 * the OpLog, and the others follow it, ready to serve with the same index (decision 50).
 */
async function runEtcdElected(run: Run): Promise<number> {
  const { etcdTunnels = [], etcdTlsDir } = run.options;
  if (!etcdTunnels.length || !etcdTlsDir)
    throw new Error('--election=Etcd needs --etcd-tunnel=<local port>=<https endpoint> and --etcd-tls-dir');
  const tunnels = await openTunnels(etcdTunnels, readClientTls(etcdTlsDir), run.logger);
  try {
    if (!(await seedPolicy(run))) return 1;
    for (;;) {
      if (run.stepDowns.asked) {
        run.status.steppedDown = true;
        if ((await run.stepDowns.released(run.shutdown)) === 'stopped') return 0;
        run.status.steppedDown = false;
        run.logger.info('no longer asked to hand over; starting a standby master');
      }
      const master = startMaster(run);
      const ending = await Promise.race([
        master.exited.then(() => 'master-exited' as const),
        run.shutdown.then(() => 'signal' as const),
        run.stepDowns.next(),
        demoted(run),
      ]);
      if (ending === 'master-exited') return masterExited(run, master);
      if (ending === 'signal') {
        await stopMaster(run, master, masterStopGraceMs);
        return 0;
      }
      if (ending === 'asked') {
        await standAside(run, master);
        continue;
      }
      // A master etcd no longer names must not answer a client again: it goes, and a new one follows
      // the OpLog as a standby.
      master.signal('SIGKILL');
      await master.exited;
      forgetMaster(run);
      run.logger.error('the master lost its etcd leadership; killed it, starting a new standby');
    }
  } finally {
    await tunnels.close();
  }
}

/**
 * Asked to hand over (a rollout or a drain): the master stops gracefully, so etcd elects a standby that
 * has followed the OpLog, and none runs here while the request holds.
 */
async function standAside(run: Run, master: Child): Promise<void> {
  run.status.steppedDown = true;
  await stopMaster(run, master, masterStopGraceMs);
  forgetMaster(run);
  run.logger.info('handed leadership over on request; running no master while the request holds');
}

/** Resolves once the running master, having served, reports it no longer leads (etcd demoted it). */
function demoted(run: Run): Promise<'demoted'> {
  const { health, master } = run.status;
  return new Promise((resolve) => {
    const timer = setInterval(() => {
      if (!health || run.status.master !== master) return clearInterval(timer);
      if (health.hasServed && health.last && health.last.role !== 'leader') {
        clearInterval(timer);
        resolve('demoted');
      }
    }, 100);
  });
}

async function runElected(run: Run): Promise<number> {
  const { options, pod, logger } = run;
  if (!options.lease) throw new Error('--election=Kubernetes needs --lease=<namespace>/<name>');
  if (!pod.ip) throw new Error('--election=Kubernetes needs KUBERNETES_POD_IP (the identity members dial)');
  const identity = `${pod.ip}:${masterEndpoints(options.masterArgs).rpcPort}`;
  const client = await KubeClient.fromDefault();
  const { leaseDurationMs, renewDeadlineMs, retryPeriodMs } = options;
  const elector = new LeaderElector(client, {
    ...options.lease,
    identity,
    leaseDurationMs,
    renewDeadlineMs,
    retryPeriodMs,
    askedToStepDown: (lease) => asksToStepDown(lease, pod.name),
  });
  run.status.freshness = () => elector.freshness();
  for (;;) {
    run.status.phase = 'campaigning';
    logger.info({ identity }, 'campaigning for the Lease');
    if (!(await campaign(run, elector))) {
      await elector.release();
      return 0;
    }
    run.status.phase = 'seeding';
    if (!(await seedPolicy(run, client))) {
      await elector.release();
      return 1;
    }
    const master = startMaster(run);
    const term = elector.lead();
    const ending: Ending = await Promise.race([
      term.then((end) => (end === 'stopped' ? new Promise<never>(() => {}) : end)),
      master.exited.then(() => 'master-exited' as const),
      run.shutdown.then(() => 'signal' as const),
    ]);
    const exit = await endTerm(run, ending, master, elector, term);
    if (exit !== undefined) return exit;
  }
}

/** Ends one term as `ending` requires; an exit code ends the program, undefined campaigns again. */
async function endTerm(
  run: Run,
  ending: Ending,
  master: Child,
  elector: LeaderElector,
  term: Promise<TermEnd>,
): Promise<number | undefined> {
  const { logger } = run;
  switch (ending) {
    case 'lost':
    case 'taken':
      // Another replica may take over from now on: this master must not answer a single request more.
      master.signal('SIGKILL');
      await master.exited;
      forgetMaster(run);
      logger.error({ why: ending }, 'stopped leading; killed mooncake_master and campaigning again');
      return undefined;
    case 'asked': {
      // Nobody takes the Lease before it runs out: the master stops gracefully within that time.
      const left = Math.max(0, (elector.standDown ?? 0) - performance.now());
      await stopMaster(run, master, Math.min(masterStopGraceMs, left));
      forgetMaster(run);
      await elector.handOver();
      run.status.steppedDown = true;
      logger.info('handed the Lease over on request; not campaigning while the Lease names this Pod');
      return undefined;
    }
    case 'master-exited':
      await elector.release();
      return masterExited(run, master);
    case 'signal':
      // Renewals go on while the master stops; should they fail meanwhile, it is killed at once.
      void term.then((end) => (end === 'lost' || end === 'taken' ? master.signal('SIGKILL') : undefined));
      await stopMaster(run, master, masterStopGraceMs);
      await elector.release();
      return 0;
  }
}

/** Campaigns until this replica holds the Lease (true) or a shutdown signal arrives (false). */
async function campaign(run: Run, elector: LeaderElector): Promise<boolean> {
  let campaigning = true;
  // The holder is only for the readiness reason, taken from the elector's own reads.
  const timer = setInterval(
    () => {
      if (!campaigning) return;
      run.status.holder = elector.observedHolder ?? run.status.holder;
      run.status.steppedDown = elector.observedAsked;
    },
    Math.min(500, run.options.retryPeriodMs),
  );
  try {
    return await Promise.race([elector.acquire(), run.shutdown.then(() => false)]);
  } finally {
    campaigning = false;
    clearInterval(timer);
  }
}

/**
 * Writes the master's tenant policy: from the seed ConfigMap in the API when this replica has a client
 * (it won the Lease), else, or when that read fails, from the mounted seed. False (after logging why)
 * when a seed exists but cannot be copied.
 */
async function seedPolicy(run: Run, client?: KubeClient): Promise<boolean> {
  const { policySeed, policyFile, policySeedConfigMap } = run.options;
  if (!policyFile) return true;
  try {
    if (client && policySeedConfigMap) {
      const configMap = `${policySeedConfigMap.namespace}/${policySeedConfigMap.name}`;
      const read = await readSeedConfigMap(client, policySeedConfigMap, seedReadMs(run.options));
      const policy = policyFromApi(read);
      if (policy !== undefined) {
        writeTenantPolicy(policy, policyFile);
        run.logger.info({ policyFile, from: 'api', configMap, found: read.kind }, 'seeded the tenant policy');
        return true;
      }
      run.logger.warn(
        { configMap, err: read.kind === 'failed' ? read.error : undefined, policySeed },
        'could not read the tenant policy seed from the API; seeding from the mounted copy, which may lag it by up to the kubelet sync period',
      );
    }
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
  const { options, status, logger } = run;
  const master = new Child('mooncake_master', run.masterPath, options.masterArgs, process.env);
  const health = new MasterHealth(masterAdmin(run));
  void health.run();
  status.master = master;
  status.health = health;
  status.phase = 'running';
  logger.info({ pid: master.pid, args: options.masterArgs }, 'started mooncake_master');
  return master;
}

function forgetMaster(run: Run): void {
  run.status.health?.stop();
  run.status.health = undefined;
  run.status.master = undefined;
  run.status.phase = 'campaigning';
}

async function stopMaster(run: Run, master: Child, graceMs: number): Promise<void> {
  run.status.phase = 'stopping';
  run.logger.info({ graceMs: Math.round(graceMs) }, 'stopping mooncake_master');
  const exit = await master.stop(graceMs);
  run.logger.info({ exit: describeExit(exit) }, 'mooncake_master stopped');
}

async function masterExited(run: Run, master: Child): Promise<number> {
  const exit = await master.exited;
  run.logger.error({ exit: describeExit(exit) }, 'mooncake_master exited on its own');
  return exit.code && exit.code > 0 ? exit.code : 1;
}
