// One real control plane (etcd + kube-apiserver) with the CRDs installed, shared by the integration
// test files of a run; its kubeconfig reaches them through KVPOOL_TEST_KUBECONFIG.

import { ControlPlane } from '../../local/control-plane.ts';
import { installCrds } from '../../local/install-crds.ts';
import { KubeClient } from '../../src/kube/client.ts';

let controlPlane: ControlPlane | undefined;

export async function globalSetup(): Promise<void> {
  controlPlane = await ControlPlane.start();
  const client = await KubeClient.fromKubeconfigFile(controlPlane.kubeconfigPath);
  try {
    await installCrds(client);
  } finally {
    await client.close();
  }
  process.env.KVPOOL_TEST_KUBECONFIG = controlPlane.kubeconfigPath;
}

export async function globalTeardown(): Promise<void> {
  await controlPlane?.stop();
}
