// The embedded local cluster: a real control plane, the node agent (a stand-in kubelet running Pods as
// processes), the service proxy, the kvpool CRDs, Settings and an InstanceType, and the operator as its
// own process. Used by `npm start` and by the end-to-end tests.
import { mkdirSync, rmSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { settingDefaults } from '../api/setting.ts';
import { acceleratorGroupLabel, runtimeVersionLabel } from '../controllers/modeldeployment/runner-image.ts';
import { KubeClient } from '../kube/client.ts';
import type { KubeObject } from '../kube/object.ts';
import { awaitAdmissionInForce } from './admission-in-force.ts';
import { ControlPlane } from './control-plane.ts';
import { installCrds } from './install-crds.ts';
import { defaultImageCatalog, type ImageCatalog } from './node-agent/images.ts';
import { defaultNodeCapacity, NodeAgent } from './node-agent/node-agent.ts';
import { freePort } from './ports.ts';
import { type ManagedProcess, startProcess } from './processes.ts';
import { ServiceProxy } from './service-proxy/service-proxy.ts';
import { kubeBinary, mooncakeVenv, projectRoot } from './toolchain.ts';
import { waitFor } from './wait-for.ts';

export const operatorNamespace = 'gpustack-system';
export const localInstanceType = 'local-gpu';
export const engineImageRepository = 'gpustack/runner';
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
  /** Extra operator flags (tests shorten intervals). */
  operatorArgs?: string[];
}

/** The engine images run the engine stand-in: real vLLM and SGLang need GPUs this machine lacks. */
function addEngineImages(catalog: ImageCatalog): ImageCatalog {
  const venv = mooncakeVenv();
  const standin = join(projectRoot, 'engine-standin');
  return catalog.add(engineImageRepository, {
    user: { uid: 0, gid: 0 },
    path: [join(standin, 'bin'), join(venv, 'bin'), '/usr/local/bin', '/usr/bin', '/bin'],
    env: { PYTHONPATH: join(standin, 'python') },
    workingDir: '/',
    hostPaths: [projectRoot, venv],
  });
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
  readonly agent: NodeAgent;
  readonly proxy: ServiceProxy;
  readonly nodes: string[];
  operator?: ManagedProcess;
  private readonly options: LocalClusterOptions;

  private constructor(
    options: LocalClusterOptions,
    cp: ControlPlane,
    client: KubeClient,
    agent: NodeAgent,
    proxy: ServiceProxy,
    nodes: string[],
  ) {
    this.options = options;
    this.root = options.root;
    this.cp = cp;
    this.client = client;
    this.agent = agent;
    this.proxy = proxy;
    this.nodes = nodes;
  }

  get kubeconfigPath(): string {
    return join(this.root, 'kubeconfig');
  }

  static async start(options: LocalClusterOptions): Promise<LocalCluster> {
    const root = options.root;
    rmSync(join(root, 'control-plane'), { recursive: true, force: true });
    mkdirSync(join(root, 'bin'), { recursive: true });
    const cp = await ControlPlane.start({ dir: join(root, 'control-plane'), controllers: true });
    const client = await KubeClient.fromKubeconfigFile(cp.kubeconfigPath);
    const nodes = Array.from({ length: options.nodes ?? 2 }, (_, i) => `kvpool-node-${i + 1}`);
    const apiPort = Number(new URL(cp.server).port);
    const proxy = new ServiceProxy({ client, root, apiServer: { host: '127.0.0.1', port: apiPort } });
    const agent = new NodeAgent({
      client,
      nodes,
      root,
      apiServer: { host: '127.0.0.1', port: apiPort, caPem: cp.certificateAuthority.certPem },
      images: addEngineImages(defaultImageCatalog({ root })),
      nodeLabels: Object.fromEntries(
        nodes.map((n) => [n, { ...localAcceleratorLabels, ...options.nodeLabels?.[n] }]),
      ),
      names: proxy,
    });
    const cluster = new LocalCluster(options, cp, client, agent, proxy, nodes);
    try {
      await cluster.install();
      await proxy.start();
      await agent.start();
      await cluster.startOperator();
      return cluster;
    } catch (err) {
      await cluster.stop();
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
          acceleratorSummary: `1/${Number(defaultNodeCapacity['nvidia.com/gpu']) * this.nodes.length}`,
          cpuSummary: `${Number(defaultNodeCapacity.cpu) * this.nodes.length}`,
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

  async stop(): Promise<void> {
    await this.operator?.stop(10_000);
    await this.agent.stop().catch(() => undefined);
    await this.proxy.stop().catch(() => undefined);
    await this.client.close();
    await this.cp.stop();
  }
}
