// The local cluster's node agent: a stand-in for the kubelet of several nodes at once, running Pods as
// real processes on this machine. In a real cluster each node's kubelet does this work; see
// docs/local-cluster.md for what is the same and what is not.
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { KubeClient } from '../../kube/client.ts';
import { EventRecorder } from '../../kube/events.ts';
import { Informer } from '../../kube/informer.ts';
import { log, objectLogger } from '../../kube/log.ts';
import type { ClusterNames } from '../service-proxy/hosts-file.ts';
import type { EnvSources } from './env.ts';
import type { ImageCatalog } from './images.ts';
import { findSystemTools } from './launch.ts';
import { NodeRegistrar, type NodeSpecification } from './nodes.ts';
import { acquirePodNetwork, type PodNetwork } from './pod-network.ts';
import type { ConfigMap, Pod, Secret } from './pod-types.ts';
import { type AgentContext, PodWorker } from './pod-worker.ts';
import { TokenSource } from './service-account-token.ts';

export interface NodeAgentOptions {
  client: KubeClient;
  /** Node names (at most 15); each gets an InternalIP from the agent's block of the Pod network. */
  nodes: string[];
  /** Where Pods, volumes and node directories live (`<root>/pods`, `<root>/nodes/<node>`). */
  root: string;
  /** How containers reach the API server (KUBERNETES_SERVICE_HOST/PORT) and its CA. */
  apiServer: { host: string; port: number; caPem: string };
  images: ImageCatalog;
  /** Extra labels per node. */
  nodeLabels?: Record<string, Record<string, string>>;
  /** Capacity (= allocatable) of every node. */
  capacity?: Record<string, string>;
  /** Service names for every container's /etc/hosts (the service proxy). */
  names?: ClusterNames;
  /** CrashLoopBackOff: first delay and cap (defaults 10 s and 40 s). */
  backoff?: { initialMs?: number; maxMs?: number };
  /** The range node and Pod addresses come from (default 198.18.0.0/15, see pod-network.ts). */
  podNetwork?: string;
  leaseRenewMs?: number;
  heartbeatMs?: number;
}

export const defaultNodeCapacity: Record<string, string> = {
  cpu: '16',
  memory: '64Gi',
  pods: '110',
  'nvidia.com/gpu': '4',
};

export class NodeAgent {
  private readonly options: NodeAgentOptions;
  private readonly logger = log.child({ program: 'node-agent' });
  private nodes: NodeSpecification[] = [];
  private registrar: NodeRegistrar | undefined;
  private network: PodNetwork | undefined;
  private readonly configMaps: Informer<ConfigMap>;
  private readonly secrets: Informer<Secret>;
  private podInformers: Informer<Pod>[] = [];
  private readonly workers = new Map<string, PodWorker>();
  private ctx: AgentContext | undefined;
  private unsubscribe: (() => void) | undefined;
  private stopped = false;

  constructor(options: NodeAgentOptions) {
    this.options = options;
    if (options.nodes.length > 15) throw new Error('the node agent runs at most 15 nodes');
    this.configMaps = new Informer<ConfigMap>(options.client, { apiVersion: 'v1', kind: 'ConfigMap' });
    this.secrets = new Informer<Secret>(options.client, { apiVersion: 'v1', kind: 'Secret' });
  }

  /** The InternalIP of a node this agent runs. */
  nodeIP(name: string): string | undefined {
    return this.nodes.find((n) => n.name === name)?.ip;
  }

  /** The directory on this machine that is the node's `/`, for hostPath volumes. */
  nodeRoot(name: string): string {
    return join(this.options.root, 'nodes', name);
  }

  async start(): Promise<void> {
    const o = this.options;
    const tools = findSystemTools();
    this.network = acquirePodNetwork(tools.ip, o.podNetwork, o.root);
    const network = this.network;
    const capacity = o.capacity ?? defaultNodeCapacity;
    this.nodes = o.nodes.map((name, i) => ({
      name,
      ip: network.nodeIP(i),
      capacity,
      labels: {
        'kubernetes.io/os': 'linux',
        'kubernetes.io/arch': 'amd64',
        'kubernetes.io/hostname': name,
        ...o.nodeLabels?.[name],
      },
    }));
    this.registrar = new NodeRegistrar(o.client, this.nodes, this.logger, {
      leaseMs: o.leaseRenewMs ?? 10_000,
      heartbeatMs: o.heartbeatMs ?? 30_000,
    });
    const sources: EnvSources = {
      configMap: (ns, name) => this.configMaps.get(name, ns),
      secret: (ns, name) => this.secrets.get(name, ns),
    };
    this.ctx = {
      client: o.client,
      root: o.root,
      tools,
      images: o.images,
      sources,
      tokens: new TokenSource(o.client),
      events: new EventRecorder(o.client, 'kubelet'),
      podIPs: network.pods,
      apiServer: o.apiServer,
      names: o.names,
      backoff: { initialMs: o.backoff?.initialMs ?? 10_000, maxMs: o.backoff?.maxMs ?? 40_000 },
      node: (name) => {
        const n = this.nodes.find((x) => x.name === name)!;
        return { name, ip: n.ip, root: this.nodeRoot(name), allocatable: n.capacity };
      },
      logger: this.logger,
    };
    await this.registrar.start();
    for (const inf of [this.configMaps, this.secrets]) {
      inf.on((_event, obj) => {
        for (const w of this.workersIn(obj.metadata.namespace)) w.sourcesChanged();
      });
      inf.start();
    }
    await Promise.all([this.configMaps.waitForSync(), this.secrets.waitForSync()]);
    this.podInformers = this.nodes.map(
      (n) =>
        new Informer<Pod>(o.client, {
          apiVersion: 'v1',
          kind: 'Pod',
          fieldSelector: `spec.nodeName=${n.name}`,
        }),
    );
    for (const inf of this.podInformers) {
      inf.on((event, pod) => this.onPod(event, pod));
      inf.start();
    }
    await Promise.all(this.podInformers.map((i) => i.waitForSync()));
    this.removeOrphans();
    this.unsubscribe = o.names?.subscribe(() => {
      for (const w of this.workers.values()) w.namesChanged();
    });
    this.logger.info({ nodes: this.nodes.map((n) => n.name), network: network.cidr }, 'node agent started');
  }

  private workersIn(namespace: string | undefined): PodWorker[] {
    return [...this.workers.entries()].filter(([key]) => key.startsWith(`${namespace}/`)).map(([, w]) => w);
  }

  private onPod(event: string, pod: Pod): void {
    if (this.stopped || !this.ctx) return;
    const key = `${pod.metadata.namespace}/${pod.metadata.uid}`;
    const worker = this.workers.get(key);
    if (event === 'delete') {
      if (worker) {
        this.workers.delete(key);
        void worker.removed();
      }
      return;
    }
    if (worker) {
      worker.update(pod);
      return;
    }
    const phase = pod.status?.phase;
    // A Pod that finished is not run again (after the node agent restarted), only removed when deleted.
    if ((phase === 'Succeeded' || phase === 'Failed') && !pod.metadata.deletionTimestamp) return;
    const logger = objectLogger(this.logger, 'Pod', pod.metadata.namespace, pod.metadata.name!);
    const created = new PodWorker(this.ctx, pod, logger);
    this.workers.set(key, created);
    created.update(pod);
  }

  /** Pod directories of this agent's nodes whose Pods no longer exist lose everything but their logs. */
  private removeOrphans(): void {
    const dir = join(this.options.root, 'pods');
    if (!existsSync(dir)) return;
    const live = new Set([...this.workers.keys()].map((k) => k.split('/')[1]));
    const ours = new Set(this.nodes.map((n) => n.name));
    for (const name of readdirSync(dir)) {
      const uid = name.split('_').at(-1);
      const marker = join(dir, name, 'node');
      if (!existsSync(marker) || live.has(uid)) continue;
      if (!ours.has(readFileSync(marker, 'utf8').trim())) continue;
      for (const sub of ['volumes', 'containers', 'etc-hosts', 'node']) {
        rmSync(join(dir, name, sub), { recursive: true, force: true });
      }
    }
  }

  /** Stops every Pod process and the heartbeats; Pod and Node objects stay as they are. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.unsubscribe?.();
    this.registrar?.stop();
    await Promise.all([...this.podInformers, this.configMaps, this.secrets].map((i) => i.stop()));
    await Promise.all([...this.workers.values()].map((w) => w.shutdown()));
    this.workers.clear();
    this.network?.release();
    this.network = undefined;
  }
}
