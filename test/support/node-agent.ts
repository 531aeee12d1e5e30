// A control plane of a test file's own, with kube-controller-manager and kube-scheduler, plus the
// local cluster's node agent (two nodes) and service proxy, in a temporary root.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KubeClient } from '../../src/kube/client.ts';
import { ControlPlane } from '../../src/local/control-plane.ts';
import { defaultImageCatalog } from '../../src/local/node-agent/images.ts';
import { NodeAgent } from '../../src/local/node-agent/node-agent.ts';
import type { Pod } from '../../src/local/node-agent/pod-types.ts';
import { podDirName } from '../../src/local/node-agent/sandbox.ts';
import { ServiceProxy } from '../../src/local/service-proxy/service-proxy.ts';
import { waitFor } from '../../src/local/wait-for.ts';

export const testNodes = ['kvpool-node-1', 'kvpool-node-2'];

export interface LocalNodes {
  cp: ControlPlane;
  client: KubeClient;
  agent: NodeAgent;
  proxy: ServiceProxy;
  root: string;
  apiPort: number;
  /** Stops the node agent, runs `meanwhile`, then starts a new one on the same nodes and root. */
  restartAgent(meanwhile?: () => Promise<void>): Promise<void>;
  stop(): Promise<void>;
}

export async function startLocalNodes(
  options: { nodeLabels?: Record<string, Record<string, string>> } = {},
): Promise<LocalNodes> {
  const cp = await ControlPlane.start({ controllers: true });
  const root = mkdtempSync(join(tmpdir(), 'kvpool-nodes-'));
  const client = await KubeClient.fromKubeconfigFile(cp.kubeconfigPath);
  const apiPort = Number(new URL(cp.server).port);
  const proxy = new ServiceProxy({ client, root, apiServer: { host: '127.0.0.1', port: apiPort } });
  const newAgent = () =>
    new NodeAgent({
      client,
      nodes: testNodes,
      root,
      apiServer: { host: '127.0.0.1', port: apiPort, caPem: cp.certificateAuthority.certPem },
      images: defaultImageCatalog({ root }),
      nodeLabels: options.nodeLabels,
      names: proxy,
    });
  const nodes: LocalNodes = {
    cp,
    client,
    agent: newAgent(),
    proxy,
    root,
    apiPort,
    async restartAgent(meanwhile) {
      await nodes.agent.stop();
      await meanwhile?.();
      nodes.agent = newAgent();
      await nodes.agent.start();
    },
    async stop() {
      await nodes.agent.stop();
      await proxy.stop();
      await client.close();
      await cp.stop();
      rmSync(root, { recursive: true, force: true });
    },
  };
  try {
    await proxy.start();
    await nodes.agent.start();
  } catch (err) {
    await nodes.stop();
    throw err;
  }
  return nodes;
}

/** A container's log (all its runs) on this machine. */
export function containerLog(nodes: LocalNodes, pod: Pod, container: string): string {
  try {
    return readFileSync(join(nodes.root, 'pods', podDirName(pod), `${container}.log`), 'utf8');
  } catch {
    return '';
  }
}

export function podRef(namespace: string, name: string) {
  return { apiVersion: 'v1', kind: 'Pod', namespace, name };
}

/** Waits until `probe` yields a value, re-reading the Pod each time. */
export function untilPod<T>(
  nodes: LocalNodes,
  namespace: string,
  name: string,
  what: string,
  probe: (pod: Pod) => T | undefined,
  timeoutMs = 60_000,
): Promise<T> {
  return waitFor(
    async () => {
      const pod = await nodes.client.find<Pod>(podRef(namespace, name));
      return pod ? probe(pod) : undefined;
    },
    { what: `${what} (${namespace}/${name})`, timeoutMs, intervalMs: 100 },
  );
}

export function isReady(pod: Pod): boolean {
  return pod.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
}
