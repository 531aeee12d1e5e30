// One Pod on one node, as the kubelet's pod worker handles it: set up the sandbox and volumes, run the
// init containers in order, then the app containers, restart them by the Pod's restartPolicy, report
// status, and on deletion stop everything gracefully and remove the Pod object.

import { canonicalJson } from '../../kube/canonical-json.ts';
import type { KubeClient } from '../../kube/client.ts';
import { ApiError } from '../../kube/errors.ts';
import type { EventRecorder } from '../../kube/events.ts';
import type { Logger } from '../../kube/log.ts';
import { apiTime } from '../../kube/time.ts';
import type { ClusterNames } from '../service-proxy/hosts-file.ts';
import type { AddressPool } from './address-pool.ts';
import { ContainerRunner } from './container.ts';
import { containerLaunch } from './container-config.ts';
import type { EnvSources } from './env.ts';
import { MountError } from './errors.ts';
import type { ImageCatalog } from './images.ts';
import type { SystemTools } from './launch.ts';
import { derivePodStatus } from './pod-status.ts';
import type { Pod, PodStatus } from './pod-types.ts';
import { PodSandbox } from './sandbox.ts';
import type { TokenSource } from './service-account-token.ts';
import { PodVolumes } from './volumes.ts';

/** What every Pod worker shares: the node agent's clients, caches and settings. */
export interface AgentContext {
  client: KubeClient;
  root: string;
  tools: SystemTools;
  images: ImageCatalog;
  sources: EnvSources;
  tokens: TokenSource;
  events: EventRecorder;
  podIPs: AddressPool;
  apiServer: { host: string; port: number; caPem: string };
  names?: ClusterNames;
  backoff: { initialMs: number; maxMs: number };
  node(name: string): { name: string; ip: string; root: string; allocatable: Record<string, string> };
  logger: Logger;
}

const mountRetryMs = 2000;
const tokenRefreshMs = 60_000;

export class PodWorker {
  private pod: Pod;
  private readonly ctx: AgentContext;
  private readonly logger: Logger;
  private readonly sandbox: PodSandbox;
  private readonly volumes: PodVolumes;
  private readonly init: ContainerRunner[];
  private readonly app: ContainerRunner[];
  private readonly startTime = apiTime();
  private readonly node: ReturnType<AgentContext['node']>;
  private sandboxReady = false;
  private volumesStale = false;
  private mountRetryAt: number | undefined;
  private lastWritten: string | undefined;
  private loop: Promise<void> | undefined;
  private dirty = false;
  private closed = false;
  private tornDown = false;
  private wake: NodeJS.Timeout | undefined;
  private readonly refresh: NodeJS.Timeout;

  constructor(ctx: AgentContext, pod: Pod, logger: Logger) {
    this.ctx = ctx;
    this.pod = pod;
    this.logger = logger;
    this.node = ctx.node(pod.spec.nodeName!);
    this.sandbox = new PodSandbox(ctx.root, pod, this.node, ctx.podIPs, ctx.names);
    this.volumes = new PodVolumes({
      nodeRoot: this.node.root,
      podDir: this.sandbox.dir,
      sources: ctx.sources,
      tokens: ctx.tokens,
      caPem: ctx.apiServer.caPem,
      allocatable: this.node.allocatable,
    });
    const host = {
      podDir: this.sandbox.dir,
      tools: ctx.tools,
      podIP: () => this.sandbox.podIP ?? '',
      prepare: async (c: Pod['spec']['containers'][number]) =>
        containerLaunch(
          {
            pod: this.pod,
            sandbox: this.sandbox,
            volumes: this.volumes,
            images: ctx.images,
            sources: ctx.sources,
            apiServer: ctx.apiServer,
            allocatable: this.node.allocatable,
          },
          c,
        ),
      changed: () => this.kick(),
      event: (type: 'Normal' | 'Warning', reason: string, message: string) =>
        void ctx.events.record(this.pod, type, reason, message),
      backoff: ctx.backoff,
      podLabel: `${pod.metadata.name}_${pod.metadata.namespace}(${pod.metadata.uid})`,
      graceSeconds: () => this.pod.spec.terminationGracePeriodSeconds ?? 30,
    };
    const previous = pod.status;
    this.init = (pod.spec.initContainers ?? []).map((c) => {
      const r = new ContainerRunner(c, true, host);
      r.resume(previous?.initContainerStatuses?.find((s) => s.name === c.name));
      return r;
    });
    this.app = pod.spec.containers.map((c) => {
      const r = new ContainerRunner(c, false, host);
      r.resume(previous?.containerStatuses?.find((s) => s.name === c.name));
      return r;
    });
    this.refresh = setInterval(() => this.sourcesChanged(), tokenRefreshMs);
  }

  /** A newer version of the Pod from the watch. */
  update(pod: Pod): void {
    const before = this.pod.metadata;
    this.pod = pod;
    if (
      canonicalJson([before.labels, before.annotations]) !==
      canonicalJson([pod.metadata.labels, pod.metadata.annotations])
    ) {
      this.volumesStale = true;
    }
    this.kick();
  }

  /** A ConfigMap or Secret changed (or tokens are due): bring volume contents up to date. */
  sourcesChanged(): void {
    this.volumesStale = true;
    this.kick();
  }

  /** Services changed: rewrite /etc/hosts in place. */
  namesChanged(): void {
    if (this.sandboxReady && !this.closed) this.sandbox.writeHosts();
  }

  private kick(): void {
    if (this.closed) return;
    if (this.loop) {
      this.dirty = true;
      return;
    }
    this.loop = (async () => {
      do {
        this.dirty = false;
        try {
          await this.sync();
        } catch (err) {
          this.logger.error({ err: (err as Error).message }, 'pod sync failed');
          this.schedule(Date.now() + 2000);
        }
      } while (this.dirty && !this.closed);
      this.loop = undefined;
    })();
  }

  private schedule(at: number): void {
    clearTimeout(this.wake);
    this.wake = setTimeout(() => this.kick(), Math.max(at - Date.now(), 10));
  }

  private async sync(): Promise<void> {
    if (this.pod.metadata.deletionTimestamp) return this.terminate();
    if (!this.sandboxReady) await this.setUpSandbox();
    else if (this.volumesStale) await this.refreshVolumes();
    if (this.sandboxReady) await this.advance();
    await this.writeStatus();
    const next = [this.mountRetryAt, ...[...this.init, ...this.app].flatMap((r) => [r.restartAt, r.retryAt])]
      .filter((t): t is number => t !== undefined)
      .sort((a, b) => a - b)[0];
    if (next !== undefined) this.schedule(next);
  }

  private async setUpSandbox(): Promise<void> {
    if (this.mountRetryAt && Date.now() < this.mountRetryAt) return;
    this.sandbox.ensure();
    try {
      await this.volumes.sync(this.pod, { podIP: this.sandbox.podIP!, hostIP: this.sandbox.hostIP });
      this.sandboxReady = true;
      this.mountRetryAt = undefined;
    } catch (err) {
      if (!(err instanceof MountError)) throw err;
      this.mountRetryAt = Date.now() + mountRetryMs;
      void this.ctx.events.record(this.pod, 'Warning', 'FailedMount', err.message);
    }
  }

  private async refreshVolumes(): Promise<void> {
    this.volumesStale = false;
    try {
      await this.volumes.sync(this.pod, { podIP: this.sandbox.podIP!, hostIP: this.sandbox.hostIP });
    } catch (err) {
      if (!(err instanceof MountError)) throw err;
      void this.ctx.events.record(this.pod, 'Warning', 'FailedMount', err.message);
    }
  }

  /** Starts what may start now: the next init container, or (once initialised) the app containers. */
  private async advance(): Promise<void> {
    const policy = this.pod.spec.restartPolicy ?? 'Always';
    const now = Date.now();
    const due = (r: ContainerRunner) => (r.retryAt ?? 0) <= now && (r.restartAt ?? 0) <= now;
    for (const r of this.init) {
      if (r.sidecar) {
        if ((!r.hasRun || r.shouldRestart(policy)) && !r.running && due(r)) await r.start();
        if (!r.started) return;
        continue;
      }
      if (r.hasRun && r.terminated?.exitCode === 0) continue;
      if (r.running) return;
      if (!r.hasRun || (policy !== 'Never' && r.shouldRestart('OnFailure'))) {
        if (due(r)) await r.start();
      }
      return;
    }
    for (const r of this.app) {
      if (r.running || !due(r)) continue;
      if (!r.hasRun || r.shouldRestart(policy)) await r.start();
    }
    // Sidecars end once every app container has finished for good.
    const finished = this.app.every((r) => r.terminated && !r.shouldRestart(policy));
    if (finished && policy !== 'Always') {
      await Promise.all(this.init.filter((r) => r.sidecar).map((r) => r.terminate(Date.now() + 5000)));
    }
  }

  private observe(): PodStatus {
    const initDone = this.init.every((r) => (r.sidecar ? r.started : r.terminated?.exitCode === 0));
    const waitingInit = this.init.length ? 'PodInitializing' : 'ContainerCreating';
    return derivePodStatus(
      {
        pod: this.pod,
        sandboxReady: this.sandboxReady,
        podIP: this.sandboxReady ? this.sandbox.podIP : undefined,
        hostIP: this.sandbox.hostIP,
        startTime: this.startTime,
        init: this.init.map((r) => ({ ...r.status('PodInitializing'), sidecar: r.sidecar })),
        app: this.app.map((r) => r.status(initDone ? 'ContainerCreating' : waitingInit)),
      },
      apiTime(),
    );
  }

  /** Writes the status through the status subresource when it differs from the stored one. */
  private async writeStatus(): Promise<void> {
    // After shutdown the Pod object is left as it is.
    if (this.closed) return;
    const status = this.observe();
    const text = canonicalJson(status);
    if (text === this.lastWritten || text === canonicalJson(this.pod.status ?? {})) return;
    const ref = {
      apiVersion: 'v1',
      kind: 'Pod',
      namespace: this.pod.metadata.namespace,
      name: this.pod.metadata.name!,
    };
    try {
      await this.ctx.client.jsonPatch(
        ref,
        [
          { op: 'test', path: '/metadata/uid', value: this.pod.metadata.uid },
          { op: 'add', path: '/status', value: status },
        ],
        'status',
      );
      this.lastWritten = text;
    } catch (err) {
      if (err instanceof ApiError && (err.isNotFound || err.isInvalid)) return;
      throw err;
    }
  }

  /** Deletion: preStop hooks, SIGTERM, SIGKILL at the grace deadline, then the final delete. */
  private async terminate(): Promise<void> {
    const grace =
      this.pod.metadata.deletionGracePeriodSeconds ?? this.pod.spec.terminationGracePeriodSeconds ?? 30;
    const deadline = Date.now() + grace * 1000;
    clearTimeout(this.wake);
    await Promise.all(
      [...this.app, ...this.init.filter((r) => !r.sidecar)].map((r) => r.terminate(deadline)),
    );
    await Promise.all(this.init.filter((r) => r.sidecar).map((r) => r.terminate(deadline)));
    if (this.closed) return;
    if (!this.tornDown) {
      try {
        await this.writeStatus();
      } catch (err) {
        this.logger.warn({ err: (err as Error).message }, 'could not write the final status');
      }
      this.tearDown();
    }
    const path = await this.ctx.client.resources.objectPath({
      apiVersion: 'v1',
      kind: 'Pod',
      namespace: this.pod.metadata.namespace,
      name: this.pod.metadata.name!,
    });
    try {
      await this.ctx.client.request('DELETE', path, {
        body: {
          apiVersion: 'v1',
          kind: 'DeleteOptions',
          gracePeriodSeconds: 0,
          preconditions: { uid: this.pod.metadata.uid },
        },
      });
    } catch (err) {
      if (!(err instanceof ApiError && (err.isNotFound || err.isConflict))) throw err;
    }
    this.close();
    this.logger.info('pod terminated and removed');
  }

  private tearDown(): void {
    if (this.tornDown) return;
    this.tornDown = true;
    this.sandbox.release();
    this.ctx.tokens.forget(this.pod.metadata.uid!);
  }

  private close(): void {
    this.closed = true;
    clearTimeout(this.wake);
    clearInterval(this.refresh);
  }

  /** The Pod object is gone (deleted with no grace): kill everything now. */
  async removed(): Promise<void> {
    this.close();
    await Promise.all([...this.app, ...this.init].map((r) => r.shutdown()));
    await this.loop;
    this.tearDown();
  }

  /** The node agent stops: kill the processes, leave the Pod object as it is. */
  async shutdown(): Promise<void> {
    this.close();
    await Promise.all([...this.app, ...this.init].map((r) => r.shutdown()));
    await this.loop;
  }
}
