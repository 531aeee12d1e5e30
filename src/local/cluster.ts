// The embedded local cluster: a real control plane, real nodes (containerd, runc, the kubelet and
// kube-proxy, see nodes/), cluster DNS, the project's images loaded on every node, the kvpool CRDs,
// Settings and an InstanceType, and the operator as its own process. Used by `npm start` and by the
// end-to-end tests.
import { mkdirSync, rmSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { buildImages } from '../../images/build.ts';
import { corednsImage, pauseImage } from '../../images/recipes.ts';
import { settingDefaults } from '../api/setting.ts';
import { KubeClient } from '../kube/client.ts';
import type { KubeObject } from '../kube/object.ts';
import { awaitAdmissionInForce } from './admission-in-force.ts';
import { ControlPlane } from './control-plane.ts';
import { installCrds } from './install-crds.ts';
import { advertisedGpus, ClusterNodes } from './nodes/cluster-nodes.ts';
import { HostNetwork } from './nodes/host-network.ts';
import { preparedImageStore } from './nodes/image-store.ts';
import { KernelSettings } from './nodes/kernel-settings.ts';
import type { LocalNode } from './nodes/node.ts';
import { freePort } from './ports.ts';
import { type ManagedProcess, startProcess } from './processes.ts';
import { kubeBinary, projectRoot } from './toolchain.ts';
import { waitFor } from './wait-for.ts';

export const operatorNamespace = 'gpustack-system';
export const localInstanceType = 'local-gpu';
export const engineImageRepository = 'gpustack/runner';

export interface LocalClusterOptions {
  /** Where everything lives (`.kvpool` of the checkout for `npm start`). */
  root: string;
  nodes?: number;
  nodeLabels?: Record<string, Record<string, string>>;
  /** Extra operator flags (tests shorten intervals). */
  operatorArgs?: string[];
}

function instanceType(): KubeObject {
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
  } as KubeObject;
}

export class LocalCluster {
  readonly root: string;
  readonly cp: ControlPlane;
  readonly client: KubeClient;
  readonly network: HostNetwork;
  readonly nodeSet: ClusterNodes;
  operator?: ManagedProcess;
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
      const nodes = new ClusterNodes({
        root,
        names: Array.from({ length: options.nodes ?? 2 }, (_, i) => `kvpool-node-${i + 1}`),
        labels: options.nodeLabels,
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
        await cluster.startOperator();
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

  private async install(): Promise<void> {
    for (const [link, target] of [
      [this.kubeconfigPath, this.cp.kubeconfigPath],
      [join(this.root, 'bin', 'kubectl'), kubeBinary('kubectl')],
    ] as const) {
      rmSync(link, { force: true });
      symlinkSync(target, link);
    }
    await installCrds(this.client);
    const apply = (obj: KubeObject) => this.client.apply(obj, { fieldManager: 'kvpool-local' });
    await apply({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: operatorNamespace } });
    for (const [name, value] of Object.entries(settingDefaults)) {
      await apply({
        apiVersion: 'gpustack.ai/v1',
        kind: 'Setting',
        metadata: { name, namespace: operatorNamespace },
        spec: { value },
      } as KubeObject);
    }
    await apply(instanceType());
    await this.client.apply(
      {
        apiVersion: 'worker.gpustack.ai/v1',
        kind: 'InstanceType',
        metadata: { name: localInstanceType },
        status: {
          phase: 'Active',
          unit: '1/2Gi/10Gi',
          acceleratorSummary: `1/${Number(advertisedGpus) * this.nodes.length}`,
          cpuSummary: `${this.nodes.length * 2}`,
        },
      } as KubeObject,
      { fieldManager: 'kvpool-local', subresource: 'status' },
    );
  }

  /** Runs `kvpool operator` as its own process, serving its webhooks on loopback. */
  private async startOperator(): Promise<void> {
    const webhookPort = await freePort();
    const healthPort = await freePort();
    this.operator = startProcess('kvpool-operator', process.execPath, {
      logDir: join(this.root, 'logs'),
      args: [
        join(projectRoot, 'src', 'cli', 'kvpool.ts'),
        'operator',
        `--kubeconfig=${this.cp.kubeconfigPath}`,
        `--namespace=${operatorNamespace}`,
        `--identity=local-operator`,
        `--health-port=${healthPort}`,
        `--webhook-port=${webhookPort}`,
        '--webhook-host=127.0.0.1',
        `--webhook-url=https://127.0.0.1:${webhookPort}`,
        ...(this.options.operatorArgs ?? []),
      ],
    });
    const operator = this.operator;
    await waitFor(
      async () => {
        operator.assertRunning();
        const res = await fetch(`http://127.0.0.1:${healthPort}/readyz`).catch(() => undefined);
        return res?.ok ? true : undefined;
      },
      { what: `the operator to be ready (log: ${operator.logFile})`, timeoutMs: 60_000 },
    );
    // Ready means bad input is refused: wait until the apiserver calls the operator's webhooks.
    await awaitAdmissionInForce(this.client, 30_000);
  }

  /** Stops everything it started; no process, mount, network device or cgroup of it is left. */
  async stop(): Promise<void> {
    await this.operator?.stop(10_000);
    await this.nodeSet.stop().catch(() => undefined);
    await this.client.close();
    await this.cp.stop();
    await this.network.release();
    this.kernel.restore();
  }
}
