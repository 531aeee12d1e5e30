// Where set-up put each component the local cluster, the tests and the benches run: in the cache of
// images/toolchain.ts, at the version toolchain.env names.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { cacheDir, toolchain, toolchainValue } from '../images/toolchain.ts';

export type KubeBinary =
  | 'kube-apiserver'
  | 'kube-controller-manager'
  | 'kube-scheduler'
  | 'kubectl'
  | 'kubelet'
  | 'kube-proxy';

export function kubeBinary(name: KubeBinary): string {
  return requireFile(join(cacheDir(), 'kube', toolchain.kubeVersion, name), name);
}

/** What a node runs besides the kubelet: containerd (with its shim and ctr), runc, crictl. */
export type NodeBinary = 'containerd' | 'containerd-shim-runc-v2' | 'ctr' | 'runc' | 'crictl';

const nodeComponents: Record<NodeBinary, [dir: string, version: string]> = {
  containerd: ['containerd', 'CONTAINERD_VERSION'],
  'containerd-shim-runc-v2': ['containerd', 'CONTAINERD_VERSION'],
  ctr: ['containerd', 'CONTAINERD_VERSION'],
  runc: ['runc', 'RUNC_VERSION'],
  crictl: ['crictl', 'CRICTL_VERSION'],
};

export function nodeBinary(name: NodeBinary): string {
  const [dir, version] = nodeComponents[name];
  return requireFile(join(cacheDir(), dir, toolchainValue(version), name), name);
}

/** The directory of the CNI plugins (bridge, host-local, loopback, portmap). */
export function cniPluginDir(): string {
  const dir = join(cacheDir(), 'cni-plugins', toolchainValue('CNI_PLUGINS_VERSION'));
  requireFile(join(dir, 'bridge'), 'the CNI plugins');
  return dir;
}

/** The local cluster's NetworkPolicy enforcer (kube-router, its firewall controller alone; decision 38). */
export function kubeRouterBinary(): string {
  const version = toolchainValue('KUBE_ROUTER_VERSION');
  return requireFile(join(cacheDir(), 'kube-router', version, 'kube-router'), `kube-router ${version}`);
}

/** The Helm CLI the project runs (Helm 3), or the Helm 4 build the chart is also tested with. */
export function helmBinary(major: 3 | 4 = 3): string {
  const version = major === 3 ? toolchain.helmVersion : toolchain.helm4Version;
  return requireFile(join(cacheDir(), 'helm', version, 'helm'), `helm ${version}`);
}

export function etcdBinary(): string {
  return requireFile(join(cacheDir(), 'etcd', toolchain.etcdVersion, 'etcd'), 'etcd');
}

/** The image registry the local cluster's nodes pull from (scripts/build-node.sh builds it). */
export function registryBinary(): string {
  return requireFile(
    join(cacheDir(), 'registry', toolchainValue('REGISTRY_VERSION'), 'registry'),
    'the registry',
  );
}

/** The Python environment holding the published Mooncake wheel. */
export function mooncakeVenv(): string {
  return join(cacheDir(), 'venv', `mooncake-${toolchain.mooncakeVersion}`);
}

export function mooncakeBinary(
  name: 'mooncake_master' | 'mc_store_rest_server' | 'mooncake_client' | 'python',
): string {
  return requireFile(join(mooncakeVenv(), 'bin', name), name);
}

function requireFile(path: string, what: string): string {
  if (!existsSync(path)) {
    throw new Error(
      `${what} is not installed at ${path}: run \`npm run setup\` (scripts/setup.sh) to build or install it`,
    );
  }
  return path;
}
