// A control plane of a test file's own (with the CRDs installed), for tests that run controllers or
// webhooks: those act cluster-wide and must not meet another file's objects.

import { ControlPlane } from '../../local/control-plane.ts';
import { installCrds } from '../../local/install-crds.ts';
import { KubeClient } from '../../src/kube/client.ts';

export interface IsolatedCluster {
  cp: ControlPlane;
  client: KubeClient;
  stop(): Promise<void>;
}

export async function startIsolatedCluster(
  options: { controllers?: boolean; auditWrites?: boolean } = {},
): Promise<IsolatedCluster> {
  const cp = await ControlPlane.start(options);
  const client = await KubeClient.fromKubeconfigFile(cp.kubeconfigPath);
  try {
    await installCrds(client);
  } catch (err) {
    await client.close();
    await cp.stop();
    throw err;
  }
  return {
    cp,
    client,
    async stop() {
      await client.close();
      await cp.stop();
    },
  };
}
