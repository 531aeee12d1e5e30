// `npm start` (node local/cli.ts [--nodes N] [--root DIR] [--no-network-policies]): the embedded local cluster in the foreground — a real control plane, real nodes
// (containerd, runc, the kubelet, kube-proxy, CoreDNS) running the project's images, the CRDs and the
// operator. Ctrl-C stops everything it started and removes what it made on this machine.

import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { projectRoot } from '../images/toolchain.ts';
import { shutdownRequested } from '../src/kube/shutdown.ts';
import { LocalCluster } from './cluster.ts';

export async function runLocal(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      nodes: { type: 'string', default: '2' },
      root: { type: 'string' },
      // NetworkPolicy enforced on every node (decision 38), as on the clusters people run.
      'network-policies': { type: 'boolean', default: true },
      'no-network-policies': { type: 'boolean', default: false },
    },
  });
  const root = values.root ?? join(projectRoot, '.kvpool');
  const stopped = shutdownRequested();
  console.error(`starting the local cluster (${values.nodes} nodes) in ${root}`);
  const cluster = await LocalCluster.start({
    root,
    nodes: Number(values.nodes),
    realEngines: true,
    networkPolicies: values['network-policies'] && !values['no-network-policies'],
  });
  const kubectl = join(root, 'bin', 'kubectl');
  console.log(
    `kvpool ready: export KUBECONFIG=${cluster.kubeconfigPath}; ${kubectl} get nodes,kvcb,instancetype`,
  );
  await stopped;
  console.error('stopping the local cluster');
  await cluster.stop();
  return 0;
}

if (import.meta.main) process.exitCode = await runLocal(process.argv.slice(2));
