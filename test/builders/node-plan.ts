// The plan of one local-cluster node, as the node configuration renders it: node 1 of slot 3.
import type { NodePlan } from '../../local/nodes/node-config.ts';

export const nodePlan = (over: Partial<NodePlan> = {}): NodePlan => ({
  name: 'kvpool-node-1',
  address: '100.67.255.10',
  dir: '/tmp/c/nodes/kvpool-node-1',
  cgroupRoot: '/kvpool/3/kvpool-node-1',
  clusterCidr: '100.67.0.0/17',
  clusterDns: '100.67.128.10',
  pauseImage: 'registry.k8s.io/pause:3.10.1',
  binaries: { runc: '/cache/runc', cniPlugins: '/cache/cni' },
  ...over,
});
