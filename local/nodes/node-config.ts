// The configuration files of one local node, as pure functions of its plan: containerd's, the CNI
// network's, the kubelet's and kube-proxy's. Paths are as the node's processes see them.
import { stringify } from 'yaml';

export interface NodePlan {
  name: string;
  address: string;
  /** Host directory that is the node's root for /var/lib and /var/log (see node.ts). */
  dir: string;
  cgroupRoot: string;
  clusterCidr: string;
  clusterDns: string;
  pauseImage: string;
  /** Registries (host:port) the node pulls from over plain HTTP: the local cluster's own. */
  registries?: string[];
  binaries: { runc: string; cniPlugins: string };
}

export const containerdSocket = '/run/containerd/containerd.sock';
export const configDir = (plan: NodePlan) => `${plan.dir}/etc/kubernetes`;
export const cniConfigDir = (plan: NodePlan) => `${plan.dir}/etc/cni/net.d`;
/** containerd's registry host configuration: a directory per registry, each with its hosts.toml. */
export const registryHostsDir = (plan: NodePlan) => `${plan.dir}/etc/containerd/certs.d`;

/** Each registry's hosts.toml, by its directory name (host:port): pull and resolve over plain HTTP. */
export function registryHosts(plan: NodePlan): Record<string, string> {
  return Object.fromEntries(
    (plan.registries ?? []).map((r) => [
      r,
      `server = "http://${r}"\n\n[host."http://${r}"]\n  capabilities = ["pull", "resolve"]\n`,
    ]),
  );
}

export function containerdConfig(plan: NodePlan): string {
  return `version = 3
root = "/var/lib/containerd"
state = "/run/containerd"
disabled_plugins = [
  "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.zfs",
  "io.containerd.snapshotter.v1.devmapper",
  "io.containerd.snapshotter.v1.blockfile",
  "io.containerd.snapshotter.v1.erofs",
  "io.containerd.differ.v1.erofs",
  "io.containerd.tracing.processor.v1.otlp",
  "io.containerd.internal.v1.tracing",
  "io.containerd.nri.v1.nri",
]

[grpc]
  address = "${containerdSocket}"

[plugins."io.containerd.cri.v1.images"]
  snapshotter = "overlayfs"
  [plugins."io.containerd.cri.v1.images".pinned_images]
    sandbox = "${plan.pauseImage}"
  [plugins."io.containerd.cri.v1.images".registry]
    config_path = "${registryHostsDir(plan)}"

[plugins."io.containerd.cri.v1.runtime"]
  # A node here may lack CAP_SYS_RESOURCE (a sandboxed machine): never ask for an OOM score below
  # containerd's own, which only that capability allows.
  restrict_oom_score_adj = true
  [plugins."io.containerd.cri.v1.runtime".containerd]
    default_runtime_name = "runc"
    [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc.options]
        BinaryName = "${plan.binaries.runc}"
        SystemdCgroup = false
  [plugins."io.containerd.cri.v1.runtime".cni]
    bin_dirs = ["${plan.binaries.cniPlugins}"]
    conf_dir = "${cniConfigDir(plan)}"
`;
}

/** The Pod network of a node: a bridge, addresses from the node's Pod range, host ports. */
export function cniConfig(podCidr: string): string {
  return `${JSON.stringify(
    {
      cniVersion: '1.0.0',
      name: 'kvpool',
      plugins: [
        {
          type: 'bridge',
          bridge: 'cni0',
          isGateway: true,
          ipMasq: false,
          hairpinMode: true,
          ipam: { type: 'host-local', ranges: [[{ subnet: podCidr }]], routes: [{ dst: '0.0.0.0/0' }] },
        },
        { type: 'portmap', capabilities: { portMappings: true } },
      ],
    },
    null,
    2,
  )}\n`;
}

export function kubeletConfig(plan: NodePlan): string {
  const dir = configDir(plan);
  return stringify({
    apiVersion: 'kubelet.config.k8s.io/v1beta1',
    kind: 'KubeletConfiguration',
    address: plan.address,
    port: 10250,
    readOnlyPort: 0,
    healthzBindAddress: '127.0.0.1',
    healthzPort: 10248,
    tlsCertFile: `${dir}/kubelet.crt`,
    tlsPrivateKeyFile: `${dir}/kubelet.key`,
    authentication: {
      anonymous: { enabled: false },
      webhook: { enabled: true },
      x509: { clientCAFile: `${dir}/ca.crt` },
    },
    authorization: { mode: 'Webhook' },
    cgroupDriver: 'cgroupfs',
    cgroupRoot: plan.cgroupRoot,
    failCgroupV1: false,
    clusterDomain: 'cluster.local',
    clusterDNS: [plan.clusterDns],
    resolvConf: `${dir}/resolv.conf`,
    containerRuntimeEndpoint: `unix://${containerdSocket}`,
    failSwapOn: false,
    // One machine's disk is shared by every node: pressure thresholds low enough never to evict here.
    evictionHard: {
      'memory.available': '100Mi',
      'nodefs.available': '1%',
      'imagefs.available': '1%',
      'nodefs.inodesFree': '1%',
    },
    imageGCHighThresholdPercent: 99,
    imageGCLowThresholdPercent: 98,
    // Status is reported more often than the default so a node's death shows within seconds.
    nodeStatusUpdateFrequency: '4s',
    nodeStatusReportFrequency: '1m',
    syncFrequency: '10s',
    serializeImagePulls: false,
    rotateCertificates: false,
    serverTLSBootstrap: false,
    protectKernelDefaults: false,
    logging: { format: 'text' },
  });
}

export function kubeProxyConfig(plan: NodePlan): string {
  return stringify({
    apiVersion: 'kubeproxy.config.k8s.io/v1alpha1',
    kind: 'KubeProxyConfiguration',
    clientConnection: { kubeconfig: `${configDir(plan)}/kube-proxy.kubeconfig` },
    hostnameOverride: plan.name,
    bindAddress: '0.0.0.0',
    clusterCIDR: plan.clusterCidr,
    mode: 'iptables',
    healthzBindAddress: '127.0.0.1:10256',
    metricsBindAddress: '127.0.0.1:10249',
    // Connection-tracking limits are machine-wide: leave them as the machine has them.
    conntrack: { maxPerCore: 0, min: 0, tcpEstablishedTimeout: '0s', tcpCloseWaitTimeout: '0s' },
  });
}

/** A kubeconfig with a client certificate. */
export function kubeconfig(server: string, caPem: string, cert: string, key: string): string {
  const b64 = (s: string) => Buffer.from(s).toString('base64');
  return stringify({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: 'local', cluster: { server, 'certificate-authority-data': b64(caPem) } }],
    users: [{ name: 'user', user: { 'client-certificate-data': b64(cert), 'client-key-data': b64(key) } }],
    contexts: [{ name: 'local', context: { cluster: 'local', user: 'user' } }],
    'current-context': 'local',
  });
}
