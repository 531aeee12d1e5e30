// Node registration and heartbeats, as the kubelet does them: the Node object (labels, capacity,
// addresses, Ready condition), without the not-ready taint the API server adds at creation, a Lease in
// kube-node-lease renewed every 10 s, and the Ready condition's heartbeat every 30 s.
import { release } from 'node:os';
import type { KubeClient } from '../../kube/client.ts';
import { ApiError } from '../../kube/errors.ts';
import type { Logger } from '../../kube/log.ts';
import type { KubeObject } from '../../kube/object.ts';
import { apiTime, microTime } from '../../kube/time.ts';
import { toolchain } from '../toolchain.ts';

export interface NodeSpecification {
  name: string;
  /** The node's InternalIP (a loopback address of its own). */
  ip: string;
  labels: Record<string, string>;
  capacity: Record<string, string>;
}

type Node = KubeObject & {
  spec?: { taints?: { key: string; effect: string; value?: string }[] };
  status?: { conditions?: { type: string; status: string; lastTransitionTime?: string }[] };
};

const notReadyTaint = 'node.kubernetes.io/not-ready';

export class NodeRegistrar {
  private readonly client: KubeClient;
  private readonly nodes: NodeSpecification[];
  private readonly logger: Logger;
  private readonly intervals: { leaseMs: number; heartbeatMs: number };
  private readonly uids = new Map<string, string>();
  private timers: NodeJS.Timeout[] = [];

  constructor(
    client: KubeClient,
    nodes: NodeSpecification[],
    logger: Logger,
    intervals: { leaseMs: number; heartbeatMs: number },
  ) {
    this.client = client;
    this.nodes = nodes;
    this.logger = logger;
    this.intervals = intervals;
  }

  async start(): Promise<void> {
    for (const node of this.nodes) {
      await this.register(node);
      await this.heartbeat(node);
    }
    // kube-node-lease may not exist yet right after the API server started; the timer retries.
    await this.each((n) => this.renewLease(n));
    this.timers.push(
      setInterval(() => void this.each((n) => this.renewLease(n)), this.intervals.leaseMs),
      setInterval(() => void this.each((n) => this.heartbeat(n)), this.intervals.heartbeatMs),
    );
  }

  stop(): void {
    for (const t of this.timers) clearInterval(t);
    this.timers = [];
  }

  private async each(fn: (n: NodeSpecification) => Promise<void>): Promise<void> {
    for (const node of this.nodes) {
      try {
        await fn(node);
      } catch (err) {
        this.logger.warn({ node: node.name, err: (err as Error).message }, 'node heartbeat failed');
      }
    }
  }

  private ref(name: string) {
    return { apiVersion: 'v1', kind: 'Node', name };
  }

  /** Creates the Node (or updates its labels) and removes the not-ready taint. */
  private async register(node: NodeSpecification): Promise<void> {
    let live = await this.client.find<Node>(this.ref(node.name));
    if (!live) {
      try {
        live = await this.client.create<Node>({
          apiVersion: 'v1',
          kind: 'Node',
          metadata: { name: node.name, labels: node.labels },
        });
      } catch (err) {
        if (!(err instanceof ApiError && err.isAlreadyExists)) throw err;
        live = await this.client.get<Node>(this.ref(node.name));
      }
    } else {
      live = await this.client.mergePatch<Node>(this.ref(node.name), { metadata: { labels: node.labels } });
    }
    this.uids.set(node.name, live.metadata.uid!);
    for (let attempt = 0; ; attempt++) {
      const taints = live.spec?.taints ?? [];
      const kept = taints.filter((t) => t.key !== notReadyTaint);
      if (kept.length === taints.length) break;
      try {
        await this.client.jsonPatch(this.ref(node.name), [
          { op: 'test', path: '/metadata/resourceVersion', value: live.metadata.resourceVersion },
          { op: 'replace', path: '/spec/taints', value: kept },
        ]);
        break;
      } catch (err) {
        if (attempt > 5 || !(err instanceof ApiError && (err.isInvalid || err.isConflict))) throw err;
        live = await this.client.get<Node>(this.ref(node.name));
      }
    }
    this.logger.info({ node: node.name, ip: node.ip }, 'node registered');
  }

  private async heartbeat(node: NodeSpecification): Promise<void> {
    const now = apiTime();
    const live = await this.client.get<Node>(this.ref(node.name));
    const condition = (type: string, status: 'True' | 'False', reason: string, message: string) => {
      const before = live.status?.conditions?.find((b) => b.type === type);
      const moved = before?.status !== status || !before.lastTransitionTime;
      return {
        type,
        status,
        reason,
        message,
        lastHeartbeatTime: now,
        lastTransitionTime: moved ? now : before.lastTransitionTime,
      };
    };
    const conditions = [
      condition(
        'MemoryPressure',
        'False',
        'KubeletHasSufficientMemory',
        'kubelet has sufficient memory available',
      ),
      condition('DiskPressure', 'False', 'KubeletHasNoDiskPressure', 'kubelet has no disk pressure'),
      condition('PIDPressure', 'False', 'KubeletHasSufficientPID', 'kubelet has sufficient PID available'),
      condition('Ready', 'True', 'KubeletReady', 'kubelet is posting ready status'),
    ];
    await this.client.mergePatch(
      this.ref(node.name),
      {
        status: {
          capacity: node.capacity,
          allocatable: node.capacity,
          conditions,
          addresses: [
            { type: 'InternalIP', address: node.ip },
            { type: 'Hostname', address: node.name },
          ],
          daemonEndpoints: { kubeletEndpoint: { Port: 10250 } },
          nodeInfo: {
            machineID: '',
            systemUUID: '',
            bootID: '',
            kernelVersion: release(),
            osImage: 'kvpool local cluster',
            containerRuntimeVersion: 'kvpool-node-agent://0.1.0',
            kubeletVersion: toolchain.kubeVersion,
            kubeProxyVersion: toolchain.kubeVersion,
            operatingSystem: 'linux',
            architecture: 'amd64',
          },
        },
      },
      'status',
    );
  }

  private async renewLease(node: NodeSpecification): Promise<void> {
    await this.client.apply(
      {
        apiVersion: 'coordination.k8s.io/v1',
        kind: 'Lease',
        metadata: {
          name: node.name,
          namespace: 'kube-node-lease',
          ownerReferences: [
            { apiVersion: 'v1', kind: 'Node', name: node.name, uid: this.uids.get(node.name)! },
          ],
        },
        spec: { holderIdentity: node.name, leaseDurationSeconds: 40, renewTime: microTime() },
      } as KubeObject,
      { fieldManager: 'kvpool-node-agent' },
    );
  }
}
