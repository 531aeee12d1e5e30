// One container of a Pod: its process (see launch.ts), its probes, and the state the kubelet reports
// for it (waiting, running, terminated; last state; restart count; back-off). The Pod worker decides
// when it starts and restarts; this class carries it out and keeps the record.
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readlinkSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { apiTime } from '../../kube/time.ts';
import { type ManagedProcess, startProcess } from '../processes.ts';
import { type ExecResult, execInContainer } from './container-exec.ts';
import {
  crashLoopBackOff,
  exitCodeOf,
  nextBackoff,
  prepareFailure,
  terminatedState,
} from './container-outcome.ts';
import { ContainerProbes } from './container-probes.ts';
import { type LaunchSpec, launchScript, type SystemTools } from './launch.ts';
import type {
  Container,
  ContainerState,
  ContainerStateTerminated,
  ContainerStateWaiting,
  ContainerStatus,
} from './pod-types.ts';
import { type ProbeKind, type ProbeTarget, runHandler } from './probes.ts';
import { logTail, terminationMessage } from './termination-message.ts';

export interface ContainerLaunch {
  env: Record<string, string>;
  spec: LaunchSpec;
  imageID: string;
}

/** What a container needs from its Pod worker. */
export interface ContainerHost {
  /** The Pod's directory: logs are `<podDir>/<container>.log`. */
  podDir: string;
  tools: SystemTools;
  podIP(): string;
  /** Resolves image, environment and mounts; throws ImageMissingError, ContainerConfigError or MountError. */
  prepare(container: Container): Promise<ContainerLaunch>;
  changed(): void;
  event(type: 'Normal' | 'Warning', reason: string, message: string): void;
  /** CrashLoopBackOff: the first delay and the cap. */
  backoff: { initialMs: number; maxMs: number };
  podLabel: string;
  /** The Pod's terminationGracePeriodSeconds. */
  graceSeconds(): number;
}

/** A container that ran this long without failing starts its back-off afresh. */
const backoffResetMs = 10 * 60_000;

export class ContainerRunner {
  readonly container: Container;
  /** An init container (a sidecar when its restartPolicy is Always). */
  readonly init: boolean;
  private readonly host: ContainerHost;
  private readonly dir: string;
  private proc: ManagedProcess | undefined;
  private launch: ContainerLaunch | undefined;
  private readonly probes: ContainerProbes;
  private stopping = false;
  restartCount = 0;
  /** The process's state: undefined before the first start, then running or terminated. */
  private current: ContainerState | undefined;
  /** Why the latest start could not happen (image, configuration). */
  private blocked: ContainerStateWaiting | undefined;
  private last: ContainerState = {};
  private startedAt: number | undefined;
  private imageID = '';
  private containerID: string | undefined;
  private startedByProbe = false;
  private readyByProbe = false;
  private backoffMs: number | undefined;
  private appliedBackoffMs = 0;
  /** When the exited container may start again (the back-off). */
  restartAt: number | undefined;
  /** When a start that could not be prepared is tried again. */
  retryAt: number | undefined;
  private everRan = false;
  private launched = false;

  constructor(container: Container, init: boolean, host: ContainerHost) {
    this.container = container;
    this.init = init;
    this.host = host;
    this.dir = join(host.podDir, 'containers', container.name);
    this.probes = new ContainerProbes(container, () => this.probeTarget(), {
      onChange: (kind, ok) => this.onProbe(kind, ok),
      onFailure: (kind, message) => {
        if (this.running && !this.stopping) {
          this.host.event('Warning', 'Unhealthy', `${kind} probe failed: ${message}`);
        }
      },
    });
  }

  get sidecar(): boolean {
    return this.init && this.container.restartPolicy === 'Always';
  }

  /** The container's command runs (its launch has finished). */
  get running(): boolean {
    return this.alive && this.launched;
  }

  /** A process exists for the container (launching or running). */
  get alive(): boolean {
    return this.proc?.running ?? false;
  }

  /** Whether a process was ever started for this container. */
  get hasRun(): boolean {
    return this.everRan;
  }

  /** The last termination, when the container is not running. */
  get terminated(): ContainerStateTerminated | undefined {
    return this.alive ? undefined : this.current?.terminated;
  }

  /** Running and past its startup probe. */
  get started(): boolean {
    return this.running && (this.startedByProbe || !this.container.startupProbe);
  }

  get ready(): boolean {
    if (!this.running) return this.init && !this.sidecar && this.current?.terminated?.exitCode === 0;
    return this.started && (this.readyByProbe || !this.container.readinessProbe);
  }

  /** Picks up what the Pod's status says about an earlier run (after the node agent restarted). */
  resume(previous: ContainerStatus | undefined): void {
    if (!previous) return;
    const ran = Boolean(
      previous.state?.running || previous.state?.terminated || previous.lastState?.terminated,
    );
    this.restartCount = previous.restartCount + (ran ? 1 : 0);
    if (previous.state?.terminated) this.last = { terminated: previous.state.terminated };
    else if (previous.lastState?.terminated) this.last = { terminated: previous.lastState.terminated };
  }

  /** Starts (or restarts) the process. A start that cannot be prepared leaves the container waiting. */
  async start(): Promise<void> {
    this.retryAt = undefined;
    let launch: ContainerLaunch;
    try {
      launch = await this.host.prepare(this.container);
    } catch (err) {
      const failure = prepareFailure(err, this.container.image);
      if (this.blocked?.message !== failure.waiting.message)
        this.host.event('Warning', 'Failed', failure.event);
      this.blocked = failure.waiting;
      this.retryAt = Date.now() + failure.retryMs;
      this.host.changed();
      return;
    }
    this.spawn(launch);
  }

  private spawn(launch: ContainerLaunch): void {
    mkdirSync(this.dir, { recursive: true });
    const scriptPath = join(this.dir, 'launch.sh');
    writeFileSync(scriptPath, launchScript(launch.spec, this.host.tools), { mode: 0o700 });
    const terminationLog = join(this.dir, 'termination-log');
    writeFileSync(terminationLog, '');
    chmodSync(terminationLog, 0o666);
    const logFile = join(this.host.podDir, `${this.container.name}.log`);
    let logOffset = 0;
    try {
      logOffset = statSync(logFile).size;
    } catch {
      // A first start.
    }
    if (this.everRan) {
      this.last = this.current?.terminated ? { terminated: this.current.terminated } : {};
      this.restartCount += 1;
    }
    this.blocked = undefined;
    this.everRan = true;
    this.launch = launch;
    this.imageID = launch.imageID;
    this.containerID = `kvpool://${randomBytes(32).toString('hex')}`;
    this.startedByProbe = false;
    this.readyByProbe = false;
    this.stopping = false;
    this.restartAt = undefined;
    this.startedAt = Date.now();
    const tools = this.host.tools;
    rmSync(launch.spec.launchedMarker, { force: true });
    const proc = startProcess(this.container.name, tools.unshare, {
      logDir: this.host.podDir,
      args: ['--mount', '--uts', '--propagation', 'private', '--', tools.sh, scriptPath],
      env: launch.env,
    });
    this.proc = proc;
    this.launched = false;
    this.current = { waiting: { reason: 'ContainerCreating' } };
    void proc.exited.then(() => this.onExit(proc, logFile, logOffset));
    this.awaitLaunch(proc, launch.spec.launchedMarker);
    this.host.changed();
  }

  /**
   * The container runs once its launch script has entered the container's root: until then exec
   * probes and hooks would run outside it. Its root directory shows when that happened.
   */
  private awaitLaunch(proc: ManagedProcess, marker: string): void {
    const check = () => {
      if (this.proc !== proc || !proc.running || proc.pid === undefined || this.launched) return;
      let root = '/';
      try {
        root = existsSync(marker) ? readlinkSync(`/proc/${proc.pid}/root`) : '/';
      } catch {
        return;
      }
      if (root === '/') {
        setTimeout(check, 5);
        return;
      }
      this.markLaunched();
    };
    check();
  }

  private markLaunched(): void {
    this.launched = true;
    this.startedAt = Date.now();
    this.current = { running: { startedAt: apiTime(this.startedAt) } };
    this.host.event('Normal', 'Started', `Started container ${this.container.name}`);
    this.probes.start();
    void this.postStart();
    this.host.changed();
  }

  private async postStart(): Promise<void> {
    const hook = this.container.lifecycle?.postStart;
    if (!hook) return;
    const result = await runHandler(hook, this.probeTarget(), 30_000);
    if (!result.ok && this.running) {
      this.host.event('Warning', 'FailedPostStartHook', `PostStartHook failed: ${result.message}`);
      await this.kill(2000);
    }
  }

  private onExit(proc: ManagedProcess, logFile: string, logOffset: number): void {
    if (this.proc !== proc) return;
    // Processes the container left behind go with it, as they would with its PID namespace.
    if (proc.pid !== undefined) {
      try {
        process.kill(-proc.pid, 'SIGKILL');
      } catch {
        // Nothing left.
      }
    }
    // A launch that failed before the command ran is a StartError, as container runtimes report it.
    if (!this.launched && this.launch && existsSync(this.launch.spec.launchedMarker)) this.markLaunched();
    this.probes.stop();
    const { code, signal } = proc.exit!;
    const message = this.launched
      ? terminationMessage({
          file: join(this.dir, 'termination-log'),
          log: logFile,
          logOffset,
          exitCode: exitCodeOf(code, signal),
          fallbackToLogs: this.container.terminationMessagePolicy === 'FallbackToLogsOnError',
        })
      : logTail(logFile, logOffset);
    const finishedAt = Date.now();
    this.current = {
      terminated: terminatedState({
        code,
        signal,
        launched: this.launched,
        message,
        startedAt: this.startedAt,
        finishedAt,
        containerID: this.containerID,
      }),
    };
    const backoff = nextBackoff(this.backoffMs, finishedAt - (this.startedAt ?? finishedAt), {
      ...this.host.backoff,
      resetAfterMs: backoffResetMs,
    });
    this.appliedBackoffMs = backoff.appliedMs;
    this.backoffMs = backoff.nextMs;
    this.restartAt = finishedAt + backoff.appliedMs;
    this.host.changed();
  }

  /** Whether the exited container restarts under this policy. */
  shouldRestart(policy: 'Always' | 'OnFailure' | 'Never'): boolean {
    const t = this.terminated;
    if (!t || this.stopping) return false;
    if (this.sidecar || policy === 'Always') return true;
    return policy === 'OnFailure' && t.exitCode !== 0;
  }

  private probeTarget(): ProbeTarget {
    return {
      podIP: this.host.podIP(),
      container: this.container,
      exec: (argv, timeoutMs) => this.exec(argv, timeoutMs),
    };
  }

  private onProbe(kind: ProbeKind, ok: boolean): void {
    if (!this.running || this.stopping) return;
    if (kind === 'Readiness') {
      this.readyByProbe = ok;
      this.host.changed();
      return;
    }
    if (kind === 'Startup' && ok) {
      this.startedByProbe = true;
      this.probes.startSteadyState();
      this.host.changed();
      return;
    }
    if (!ok) {
      const probe = kind === 'Liveness' ? this.container.livenessProbe : this.container.startupProbe;
      this.host.event(
        'Normal',
        'Killing',
        `Container ${this.container.name} failed ${kind.toLowerCase()} probe, will be restarted`,
      );
      const graceS = probe?.terminationGracePeriodSeconds ?? this.host.graceSeconds();
      void this.kill(graceS * 1000);
    }
  }

  /** Runs a command inside the running container, as its user, with its environment. */
  exec(argv: string[], timeoutMs: number): Promise<ExecResult> {
    const pid = this.proc?.pid;
    if (!this.running || pid === undefined || !this.launch) {
      return Promise.resolve({ code: null, output: 'container is not running', timedOut: false });
    }
    return execInContainer(pid, this.launch, argv, timeoutMs, this.host.tools);
  }

  /** SIGTERM to the container's processes, SIGKILL after `graceMs`; resolves once it exited. */
  async kill(graceMs: number): Promise<void> {
    const proc = this.proc;
    if (!proc?.running) return;
    this.probes.stop();
    await proc.stop(Math.max(graceMs, 0));
  }

  /** Deletion: the preStop hook, then SIGTERM, then SIGKILL at the deadline. No restart follows. */
  async terminate(deadline: number): Promise<void> {
    this.stopping = true;
    this.restartAt = undefined;
    this.retryAt = undefined;
    if (!this.alive) return;
    this.probes.stop();
    const hook = this.container.lifecycle?.preStop;
    if (hook && this.running) {
      const result = await runHandler(hook, this.probeTarget(), Math.max(deadline - Date.now(), 1000));
      if (!result.ok) {
        this.host.event('Warning', 'FailedPreStopHook', `PreStopHook failed: ${result.message}`);
      }
    }
    this.host.event('Normal', 'Killing', `Stopping container ${this.container.name}`);
    await this.kill(deadline - Date.now());
  }

  /** The node agent stops: end the process quickly, report nothing. */
  async shutdown(): Promise<void> {
    this.stopping = true;
    this.probes.stop();
    await this.proc?.stop(2000);
  }

  /** The container's status; `notStarted` is the waiting reason before its first start. */
  status(notStarted: 'ContainerCreating' | 'PodInitializing'): ContainerStatus {
    const backingOff =
      !this.running && this.terminated && !this.stopping && (this.restartAt ?? 0) > Date.now();
    let state: ContainerState = this.current ?? { waiting: { reason: notStarted } };
    if (!this.running && this.blocked) state = { waiting: this.blocked };
    else if (backingOff)
      state = { waiting: crashLoopBackOff(this.appliedBackoffMs, this.container.name, this.host.podLabel) };
    return {
      name: this.container.name,
      image: this.container.image ?? '',
      imageID: this.imageID,
      ...(this.containerID ? { containerID: this.containerID } : {}),
      state,
      lastState: this.last,
      ready: this.ready,
      started: this.started,
      restartCount: this.restartCount,
    };
  }
}
