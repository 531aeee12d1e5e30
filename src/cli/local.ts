// `kvpool local`: a real control plane on this machine with the CRDs installed, in the foreground.
// Ctrl-C stops every process it started.
import { mkdirSync, rmSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { KubeClient } from '../kube/client.ts';
import { installCrds } from '../kube/install-crds.ts';
import { ControlPlane } from '../local/control-plane.ts';
import { kubeBinary, projectRoot } from '../local/toolchain.ts';

export async function runLocal(_args: string[]): Promise<number> {
  const home = join(projectRoot, '.kvpool');
  const dir = join(home, 'control-plane');
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(join(home, 'bin'), { recursive: true });
  const cp = await ControlPlane.start({ dir, controllers: true });
  try {
    await serve(cp, home);
  } finally {
    console.error('stopping the local control plane');
    await cp.stop();
  }
  return 0;
}

async function serve(cp: ControlPlane, home: string): Promise<void> {
  const kubeconfig = join(home, 'kubeconfig');
  rmSync(kubeconfig, { force: true });
  symlinkSync(cp.kubeconfigPath, kubeconfig);
  const kubectl = join(home, 'bin', 'kubectl');
  rmSync(kubectl, { force: true });
  symlinkSync(kubeBinary('kubectl'), kubectl);
  const client = await KubeClient.fromKubeconfigFile(cp.kubeconfigPath);
  await installCrds(client);
  await client.close();
  console.log(`kvpool ready: export KUBECONFIG=${kubeconfig}; ${kubectl} get crds`);
  await new Promise<void>((resolve) => {
    process.once('SIGINT', resolve);
    process.once('SIGTERM', resolve);
  });
}
