// Nodes: as registered, and as the node controller reports them once their kubelet is Ready or gone.
import type { Node } from 'kubernetes-types/core/v1.js';
import type { KubeObject } from '../../src/kube/object.ts';

/** A Node named `name`, with `labels` when given. */
export function node(name: string, labels?: Record<string, string>): KubeObject<Node> {
  return { apiVersion: 'v1', kind: 'Node', metadata: { name, ...(labels ? { labels } : {}) } };
}

/** A Linux Node labelled with its hostname, as a kubelet registers it. */
export const linuxNode = (name: string) =>
  node(name, { 'kubernetes.io/os': 'linux', 'kubernetes.io/hostname': name });

/** A node whose kubelet stopped reporting: the node controller's Unknown, as after the node died. */
export function nodeNotReporting(name: string): KubeObject<Node> {
  return {
    ...node(name),
    status: {
      conditions: [
        {
          type: 'Ready',
          status: 'Unknown',
          reason: 'NodeStatusUnknown',
          message: 'Kubelet stopped posting node status.',
        },
      ],
    },
  };
}

export function readyNode(name: string): KubeObject<Node> {
  return {
    ...node(name),
    status: { conditions: [{ type: 'Ready', status: 'True', reason: 'KubeletReady' }] },
  };
}
