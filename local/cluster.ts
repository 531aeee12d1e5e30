// The embedded local cluster: a real control plane, real nodes (containerd, runc, the kubelet and
// kube-proxy, see nodes/), cluster DNS, the project's images loaded on every node, kvpool installed by
// its Helm chart (the operator runs in the cluster) and an InstanceType. Used by `npm start` and by
// the end-to-end tests.
import { mkdirSync, rmSync, symlinkSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import type { Namespace } from 'kubernetes-types/core/v1.js';
import { buildImages } from '../images/build.ts';
import { corednsImage, pauseImage } from '../images/recipes.ts';
import type { InstanceType } from '../src/api/types.ts';
import { KubeClient } from '../src/kube/client.ts';
import type { KubeObject } from '../src/kube/object.ts';
import { acceleratorGroupLabel, runtimeVersionLabel } from '../src/model/runner-image.ts';
import { awaitAdmissionInForce } from './admission-in-force.ts';
import { ControlPlane } from './control-plane.ts';
import { chartDir, Helm } from './helm.ts';
import { advertisedGpus, ClusterNodes } from './nodes/cluster-nodes.ts';
import { HostNetwork } from './nodes/host-network.ts';
import { preparedImageStore } from './nodes/image-store.ts';
import { KernelSettings } from './nodes/kernel-settings.ts';
import type { LocalNode } from './nodes/node.ts';
import { helmBinary, kubeBinary, projectRoot } from './toolchain.ts';

export const operatorNamespace = 'gpustack-system';
export const localInstanceType = 'local-gpu';
export const engineImageRepository = 'gpustack/runner';
export const releaseName = 'kvpool';
/** The local InstanceType's accelerator group, and the runtime its nodes report (a default image's tag). */
const localAcceleratorLabels = {
  [acceleratorGroupLabel('nvidia-local')]: 'true',
  [runtimeVersionLabel('nvidia')]: '13.0',
};

export interface LocalClusterOptions {
  /** Where everything lives (`.kvpool` of the checkout for `npm start`). */
  root: string;
  nodes?: number;
  nodeLabels?: Record<string, Record<string, string>>;
  /** Extra operator flags (tests shorten intervals), passed through the chart's operator.extraArgs. */
  operatorArgs?: string[];
  /** The namespace the chart installs the operator into (default gpustack-system). */
  namespace?: string;
}

function instanceType(): InstanceType {
  return {
    apiVersion: 'worker.gpustack.ai/v1',
    kind: 'InstanceType',
    metadata: {
      name: localInstanceType,
      labels: { 'kubernetes.io/os': 'linux', 'kubernetes.io/arch': 'amd64' },
    },
    spec: {
      acceleratable: true,
      acceleratorGroup: 'nvidia-local',
      manufacturer: 'nvidia',
      product: 'local stand-in accelerator',
      os: 'linux',
      arch: 'amd64',
      unitResources: { cpu: '1', ram: '2Gi' },
      localStorage: '10Gi',
      displayName: 'Local cluster node (stand-in accelerator)',
    },
  };
}

export class LocalCluster {
  readonly root: string;
  readonly cp: ControlPlane;
  readonly client: KubeClient;
  readonly network: HostNetwork;
  readonly nodeSet: ClusterNodes;
  private readonly options: LocalClusterOptions;
  private readonly kernel: KernelSettings;

  private constructor(
    options: LocalClusterOptions,
    parts: {
      cp: ControlPlane;
      client: KubeClient;
      network: HostNetwork;
      nodes: ClusterNodes;
      kernel: KernelSettings;
    },
  ) {
    this.options = options;
    this.root = options.root;
    this.cp = parts.cp;
    this.client = parts.client;
    this.network = parts.network;
    this.nodeSet = parts.nodes;
    this.kernel = parts.kernel;
  }

  get kubeconfigPath(): string {
    return join(this.root, 'kubeconfig');
  }

  /** The nodes' names, in order. */
  get nodes(): string[] {
    return this.nodeSet.nodes.map((n) => n.name);
  }

  node(name: string): LocalNode {
    return this.nodeSet.node(name);
  }

  /** This machine's address on the cluster's network: Pods reach a program here on it. */
  get hostAddress(): string {
    return this.network.addressing.hostAddress;
  }

  static async start(options: LocalClusterOptions): Promise<LocalCluster> {
    const root = options.root;
    rmSync(join(root, 'control-plane'), { recursive: true, force: true });
    rmSync(join(root, 'nodes'), { recursive: true, force: true });
    rmSync(join(root, 'logs'), { recursive: true, force: true });
    mkdirSync(join(root, 'bin'), { recursive: true });
    const images = await buildImages();
    // The kubelets change a few machine-wide settings; they are put back when the cluster stops.
    const kernel = KernelSettings.record();
    const network = await HostNetwork.acquire();
    const a = network.addressing;
    let cp: ControlPlane | undefined;
    let client: KubeClient | undefined;
    try {
      cp = await ControlPlane.start({
        dir: join(root, 'control-plane'),
        controllers: true,
        network: {
          address: a.hostAddress,
          serviceCidr: a.serviceCidr,
          kubernetesServiceIp: a.kubernetesServiceIp,
          clusterCidr: a.clusterCidr,
        },
      });
      client = await KubeClient.fromKubeconfigFile(cp.kubeconfigPath);
      const names = Array.from({ length: options.nodes ?? 2 }, (_, i) => `kvpool-node-${i + 1}`);
      const nodes = new ClusterNodes({
        root,
        names,
        labels: Object.fromEntries(
          names.map((n) => [n, { ...localAcceleratorLabels, ...options.nodeLabels?.[n] }]),
        ),
        network,
        server: cp.server,
        ca: cp.certificateAuthority,
        client,
        pauseImage,
        corednsImage,
        imageStore: await preparedImageStore(images.map((i) => i.archive)),
      });
      const cluster = new LocalCluster(options, { cp, client, network, nodes, kernel });
      try {
        await nodes.start();
        await cluster.install();
        return cluster;
      } catch (err) {
        await cluster.stop();
        throw err;
      }
    } catch (err) {
      if (!client) {
        await cp?.stop();
        await network.release();
        kernel.restore();
      }
      throw err;
    }
  }

  /**
   * Installs kvpool as a user would, with the chart (`helm install`), and the local InstanceType; the
   * operator runs in the cluster as its ServiceAccount, under RBAC and Pod Security.
   */
  private async install(): Promise<void> {
    for (const [link, target] of [
      [this.kubeconfigPath, this.cp.kubeconfigPath],
      [join(this.root, 'bin', 'kubectl'), kubeBinary('kubectl')],
      [join(this.root, 'bin', 'helm'), helmBinary()],
      // `kubectl kvpool` with this directory on the PATH.
      [join(this.root, 'bin', 'kubectl-kvpool'), join(projectRoot, 'bin', 'kubectl-kvpool')],
    ] as const) {
      rmSync(link, { force: true });
      symlinkSync(target, link);
    }
    // As the chart's README says: the namespace first, then the chart adopts it.
    const namespace: KubeObject<Namespace> = {
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: { name: this.namespace },
    };
    await this.client.apply(namespace, { fieldManager: 'kvpool-local' });
    await this.helm.run([
      'install',
      releaseName,
      chartDir,
      '--namespace',
      this.namespace,
      '--take-ownership',
      '--wait',
      '--timeout',
      '5m',
      '--set',
      `operator.logLevel=${process.env.KVPOOL_LOG_LEVEL ?? 'info'}`,
      '--set-json',
      `operator.extraArgs=${JSON.stringify(this.options.operatorArgs ?? [])}`,
      // This machine reads the stores' /metrics too (the API server's Pod proxy, a local Prometheus).
      '--set-json',
      `metrics.store.networkPolicy.extraFrom=${JSON.stringify([{ ipBlock: { cidr: `${this.hostAddress}/32` } }])}`,
    ]);
    await this.client.apply(instanceType(), { fieldManager: 'kvpool-local' });
    const status: KubeObject<Pick<InstanceType, 'status'>> = {
      apiVersion: 'worker.gpustack.ai/v1',
      kind: 'InstanceType',
      metadata: { name: localInstanceType },
      status: {
        phase: 'Active',
        unit: '1/2Gi/10Gi',
        acceleratorSummary: `1/${Number(advertisedGpus) * this.nodes.length}`,
        cpuSummary: `${availableParallelism() * this.nodes.length}`,
      },
    };
    await this.client.apply(status, { fieldManager: 'kvpool-local', subresource: 'status' });
    // Ready means bad input is refused: wait until the apiserver calls the operator's webhooks.
    await awaitAdmissionInForce(this.client, 60_000);
  }

  /** The Helm CLI against this cluster. */
  get helm(): Helm {
    return new Helm(this.kubeconfigPath, join(this.root, 'helm'));
  }

  /** Where the chart installed the operator (and the Settings). */
  get namespace(): string {
    return this.options.namespace ?? operatorNamespace;
  }

  /** Stops everything it started; no process, mount, network device or cgroup of it is left. */
  async stop(): Promise<void> {
    await this.nodeSet.stop().catch(() => undefined);
    await this.client.close();
    await this.cp.stop();
    await this.network.release();
    this.kernel.restore();
  }
}
