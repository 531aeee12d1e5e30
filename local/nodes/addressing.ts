// The addresses of one local cluster, all from one /16 of 100.64.0.0/10 (shared address space, routed
// nowhere here): nodes on a host bridge, a /24 of Pod addresses per node, and the Service range.
// Pure: the slot decides everything, so a cluster's addresses can be derived from its slot alone.

export const maxSlots = 64;

export interface ClusterAddressing {
  slot: number;
  /** The host bridge's name and address: the API server listens here. */
  bridge: string;
  hostAddress: string;
  nodeSubnet: string;
  /** Pod addresses; the controller manager hands each node a /24 of it. */
  clusterCidr: string;
  serviceCidr: string;
  kubernetesServiceIp: string;
  dnsServiceIp: string;
  /** Node k's (0-based) address, network namespace and host-side interface. */
  node(k: number): { address: string; netns: string; hostVeth: string; nodeVeth: string };
}

export function clusterAddressing(slot: number): ClusterAddressing {
  if (!Number.isInteger(slot) || slot < 0 || slot >= maxSlots)
    throw new Error(`slot ${slot} is not in 0..${maxSlots - 1}`);
  const net = `100.${64 + slot}`;
  return {
    slot,
    bridge: `kvpool${slot}`,
    hostAddress: `${net}.255.1`,
    nodeSubnet: `${net}.255.0/24`,
    clusterCidr: `${net}.0.0/17`,
    serviceCidr: `${net}.128.0/20`,
    kubernetesServiceIp: `${net}.128.1`,
    dnsServiceIp: `${net}.128.10`,
    node(k) {
      if (!Number.isInteger(k) || k < 0 || k > 200) throw new Error(`node index ${k} is not in 0..200`);
      return {
        address: `${net}.255.${10 + k}`,
        netns: `kvpool${slot}-n${k}`,
        hostVeth: `kvpool${slot}h${k}`,
        nodeVeth: `kvpool${slot}n${k}`,
      };
    },
  };
}
