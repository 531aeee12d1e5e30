// Nodes for a control plane without kubelets, so that its controllers and scheduler place Pods on them.
import type { KubeClient } from '../../src/kube/client.ts';
import { linuxNode } from '../builders/index.ts';

/** Registers each Node as a kubelet would: Ready, with allocatable CPU, memory and Pods, no not-ready taint. */
export async function registerReadyNodes(client: KubeClient, names: string[]): Promise<void> {
  for (const name of names) {
    const ref = { apiVersion: 'v1', kind: 'Node', name };
    await client.create(linuxNode(name));
    await client.mergePatch(ref, { spec: { taints: null } });
    const capacity = { cpu: '8', memory: '64Gi', pods: '110' };
    await client.mergePatch(
      ref,
      {
        status: {
          capacity,
          allocatable: capacity,
          conditions: [{ type: 'Ready', status: 'True', reason: 'KubeletReady', message: 'ready' }],
        },
      },
      'status',
    );
  }
}
