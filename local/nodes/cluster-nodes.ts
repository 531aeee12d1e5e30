// The local cluster's nodes as a group: their network, their start (in parallel), the Pod range each
// is given, cluster DNS, and the one fake resource the nodes advertise (see below).
import type { Deployment } from 'kubernetes-types/apps/v1.js';
import type { Node } from 'kubernetes-types/core/v1.js';
import type { KubeClient } from '../../src/kube/client.ts';
import type { KubeObject } from '../../src/kube/object.ts';
import type { CertificateAuthority } from '../../src/kube/pki.ts';
import { waitFor } from '../../src/kube/wait-for.ts';
import { clusterDns } from './addons.ts';
import type { HostNetwork } from './host-network.ts';
import { enforcerRbac } from './network-policy.ts';
import { LocalNode } from './node.ts';

/**
 * Engines ask for GPUs by the extended resource nvidia.com/gpu. This machine has none, and no device
 * plugin runs, so each node advertises some by patching its status, the way Kubernetes documents for
 * node-level extended resources; the engine stand-in uses none of them.
 */
export const advertisedGpus = '4';

export interface ClusterNodesOptions {
  root: string;
  names: string[];
  labels?: Record<string, Record<string, string>>;
  network: HostNetwork;
  server: string;
  ca: CertificateAuthority;
  client: KubeClient;
  pauseImage: string;
  corednsImage: string;
  imageStore: string;
  /** Plain-HTTP registries (host:port) the nodes pull from: the cluster's own. */
  registries?: string[];
}

export class ClusterNodes {
  readonly nodes: LocalNode[];
  private readonly options: ClusterNodesOptions;
  /** Whether every node runs the NetworkPolicy enforcer (a node started again gets it back). */
  private enforcing = false;

  constructor(options: ClusterNodesOptions) {
    this.options = options;
    this.nodes = options.names.map(
      (name, index) =>
        new LocalNode({
          name,
          index,
          clusterRoot: options.root,
          network: options.network,
          server: options.server,
          ca: options.ca,
          labels: options.labels?.[name],
          pauseImage: options.pauseImage,
          imageStore: options.imageStore,
          registries: options.registries,
        }),
    );
  }

  node(name: string): LocalNode {
    const node = this.nodes.find((n) => n.name === name);
    if (!node) throw new Error(`no local node named ${name}`);
    return node;
  }

  /** Starts every node and cluster DNS; resolves when all nodes are Ready and DNS serves. */
  async start(timeoutMs = 180_000): Promise<void> {
    for (const n of this.nodes) this.options.network.addNode(n.index);
    await Promise.all(this.nodes.map((n) => this.startNode(n, timeoutMs)));
    for (const obj of clusterDns(this.options.corednsImage, this.options.network.addressing.dnsServiceIp)) {
      await this.options.client.apply(obj, { fieldManager: 'kvpool-local', force: true });
    }
    await waitFor(
      async () => {
        const d = await this.options.client.get<KubeObject<Deployment>>({
          apiVersion: 'apps/v1',
          kind: 'Deployment',
          namespace: 'kube-system',
          name: 'coredns',
        });
        return (d.status?.readyReplicas ?? 0) >= 1 ? true : undefined;
      },
      { what: 'cluster DNS (CoreDNS) to be ready', timeoutMs },
    );
  }

  /** Starts one node (again, after kill) and waits until it is Ready with its Pod network. */
  async startNode(node: LocalNode, timeoutMs = 180_000): Promise<void> {
    await node.start();
    const client = this.options.client;
    const ref = { apiVersion: 'v1', kind: 'Node', name: node.name };
    const podCidr = await waitFor(async () => (await client.find<KubeObject<Node>>(ref))?.spec?.podCIDR, {
      what: `node ${node.name} to register and get a Pod range (logs: ${node.name}-kubelet.log)`,
      timeoutMs,
    });
    node.setPodCidr(podCidr);
    await waitFor(
      async () => {
        const n = await client.get<KubeObject<Node>>(ref);
        if (n.status?.capacity?.['nvidia.com/gpu'] !== advertisedGpus) {
          await client.jsonPatch(
            ref,
            [{ op: 'add', path: '/status/capacity/nvidia.com~1gpu', value: advertisedGpus }],
            'status',
          );
          return undefined;
        }
        return n.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True')
          ? true
          : undefined;
      },
      { what: `node ${node.name} to be Ready`, timeoutMs, intervalMs: 200 },
    );
    if (this.enforcing) await node.enforceNetworkPolicies();
  }

  /**
   * NetworkPolicy enforced from now on: the enforcer's rights, then kube-router's firewall on every
   * node (network-policy.ts). Resolves when each node's enforcer has set up its chains.
   */
  async enforceNetworkPolicies(): Promise<void> {
    for (const obj of enforcerRbac()) {
      await this.options.client.apply(obj, { fieldManager: 'kvpool-local', force: true });
    }
    this.enforcing = true;
    await Promise.all(this.nodes.map((n) => n.enforceNetworkPolicies()));
  }

  async stop(): Promise<void> {
    await Promise.all(this.nodes.map((n) => n.stop()));
    for (const n of this.nodes) this.options.network.removeNode(n.index);
  }
}
