// A real Kubernetes control plane on loopback: etcd and kube-apiserver, and on request
// kube-controller-manager and kube-scheduler, with generated certificates and an admin kubeconfig.
// Used by the integration tests and by the local cluster.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import {
  type CertificateAuthority,
  createCertificateAuthority,
  createSigningKeyPair,
} from '../src/kube/pki.ts';
import { waitFor } from '../src/kube/wait-for.ts';
import { freePort } from './ports.ts';
import { type ManagedProcess, startProcess } from './processes.ts';
import { etcdBinary, kubeBinary } from './toolchain.ts';

export interface ControlPlaneOptions {
  /** Working directory (certificates, kubeconfig, etcd data, logs); a temporary one when omitted. */
  dir?: string;
  /** Also run kube-controller-manager and kube-scheduler. */
  controllers?: boolean;
  startupTimeoutMs?: number;
  /** Addresses for a cluster with nodes (see nodes/addressing.ts); loopback only when omitted. */
  network?: ControlPlaneNetwork;
  /** Record every write request (who, when, what) in `auditLogPath`, as JSON lines. */
  auditWrites?: boolean;
}

// Writes only, at the Metadata level: each recorded when received (before it is served) and when done.
const auditPolicy = {
  apiVersion: 'audit.k8s.io/v1',
  kind: 'Policy',
  omitStages: ['ResponseStarted'],
  rules: [
    { level: 'Metadata', verbs: ['create', 'update', 'patch', 'delete', 'deletecollection'] },
    { level: 'None' },
  ],
};

export interface ControlPlaneNetwork {
  /** The API server listens and advertises here; nodes reach it on this address. */
  address: string;
  serviceCidr: string;
  kubernetesServiceIp: string;
  /** Pod addresses, a /24 of which the controller manager gives each node. */
  clusterCidr: string;
}

// Controllers a cluster with nodes needs besides: Pod ranges, node health and Pod eviction, Jobs, PDBs.
const nodeControllers = [
  'node-ipam-controller',
  'node-lifecycle-controller',
  'taint-eviction-controller',
  'pod-garbage-collector-controller',
  'ttl-controller',
  'job-controller',
  'ttl-after-finished-controller',
  'disruption-controller',
  'clusterrole-aggregation-controller',
  // Claims bound to the volumes local/volumes.ts makes (a store's etcd keeps its data on one).
  'persistentvolume-binder-controller',
  'persistentvolume-protection-controller',
  'persistentvolumeclaim-protection-controller',
];

const controllerSet = [
  'garbage-collector-controller',
  'deployment-controller',
  'replicaset-controller',
  'daemonset-controller',
  'statefulset-controller',
  'namespace-controller',
  'serviceaccount-controller',
  'serviceaccount-token-controller',
  'root-ca-certificate-publisher-controller',
  'endpoints-controller',
  'endpointslice-controller',
  // PodDisruptionBudget status, which the Eviction API decides on.
  'disruption-controller',
];

interface Files {
  ca: string;
  apiserverCert: string;
  apiserverKey: string;
  adminCert: string;
  adminKey: string;
  saPublic: string;
  saPrivate: string;
  kubeletClientCert: string;
  kubeletClientKey: string;
  kubeconfig: string;
}

export class ControlPlane {
  private etcd?: ManagedProcess;
  private apiserver?: ManagedProcess;
  private readonly extras: ManagedProcess[] = [];
  private readonly ownsDir: boolean;
  readonly dir: string;
  readonly logDir: string;
  private files!: Files;
  private ports!: { etcdClient: number; etcdPeer: number; apiserver: number };
  private ca!: CertificateAuthority;
  private clientTls!: { ca: string; cert: string; key: string };

  private readonly options: ControlPlaneOptions;

  /** The processes' ids, for a bench that accounts their CPU time. */
  get pids(): { apiserver: number | undefined; etcd: number | undefined } {
    return { apiserver: this.apiserver?.pid, etcd: this.etcd?.pid };
  }

  private constructor(options: ControlPlaneOptions) {
    this.options = options;
    this.ownsDir = !options.dir;
    this.dir = options.dir ?? mkdtempSync(join(tmpdir(), 'kvpool-cp-'));
    this.logDir = join(this.dir, 'logs');
  }

  static async start(options: ControlPlaneOptions = {}): Promise<ControlPlane> {
    const cp = new ControlPlane(options);
    try {
      await cp.prepare();
      await cp.startEtcd();
      await cp.startApiserver();
      if (options.controllers) await cp.startControllers();
      return cp;
    } catch (err) {
      await cp.stop();
      throw err;
    }
  }

  get server(): string {
    return `https://${this.address}:${this.ports.apiserver}`;
  }

  /** Where the API server listens. */
  get address(): string {
    return this.options.network?.address ?? '127.0.0.1';
  }

  get kubeconfigPath(): string {
    return this.files.kubeconfig;
  }

  /** The API server's audit log (with `auditWrites`; the log backend blocks, so a request's line precedes its answer). */
  get auditLogPath(): string {
    return join(this.logDir, 'audit.log');
  }

  get certificateAuthority(): CertificateAuthority {
    return this.ca;
  }

  private timeout(): number {
    return this.options.startupTimeoutMs ?? 60_000;
  }

  private async prepare(): Promise<void> {
    const pki = join(this.dir, 'pki');
    mkdirSync(pki, { recursive: true });
    this.ports = { etcdClient: await freePort(), etcdPeer: await freePort(), apiserver: await freePort() };
    this.ca = await createCertificateAuthority('kvpool-local-ca');
    const serving = await this.ca.issue({
      commonName: 'kube-apiserver',
      hosts: [
        '127.0.0.1',
        'localhost',
        this.options.network?.kubernetesServiceIp ?? '10.0.0.1',
        ...(this.options.network ? [this.options.network.address] : []),
        'kubernetes',
        'kubernetes.default',
        'kubernetes.default.svc',
      ],
      usage: 'server',
    });
    const admin = await this.ca.issue({
      commonName: 'kvpool-admin',
      organizations: ['system:masters'],
      usage: 'client',
    });
    // The API server's identity towards kubelets (logs, exec); the kubelets authorize it by group.
    const kubeletClient = await this.ca.issue({
      commonName: 'kube-apiserver-kubelet-client',
      organizations: ['system:masters'],
      usage: 'client',
    });
    const sa = await createSigningKeyPair();
    const files: Files = {
      ca: join(pki, 'ca.crt'),
      apiserverCert: join(pki, 'apiserver.crt'),
      apiserverKey: join(pki, 'apiserver.key'),
      adminCert: join(pki, 'admin.crt'),
      adminKey: join(pki, 'admin.key'),
      saPublic: join(pki, 'sa.pub'),
      saPrivate: join(pki, 'sa.key'),
      kubeletClientCert: join(pki, 'kubelet-client.crt'),
      kubeletClientKey: join(pki, 'kubelet-client.key'),
      kubeconfig: join(this.dir, 'kubeconfig'),
    };
    writeFileSync(files.ca, this.ca.certPem);
    writeFileSync(join(pki, 'ca.key'), this.ca.keyPem, { mode: 0o600 });
    writeFileSync(files.apiserverCert, serving.certPem);
    writeFileSync(files.apiserverKey, serving.keyPem, { mode: 0o600 });
    writeFileSync(files.adminCert, admin.certPem);
    writeFileSync(files.adminKey, admin.keyPem, { mode: 0o600 });
    writeFileSync(files.kubeletClientCert, kubeletClient.certPem);
    writeFileSync(files.kubeletClientKey, kubeletClient.keyPem, { mode: 0o600 });
    writeFileSync(files.saPublic, sa.publicKeyPem);
    writeFileSync(files.saPrivate, sa.privateKeyPem, { mode: 0o600 });
    this.files = files;
    this.clientTls = { ca: this.ca.certPem, cert: admin.certPem, key: admin.keyPem };
    writeFileSync(files.kubeconfig, this.kubeconfig(), { mode: 0o600 });
  }

  private kubeconfig(server = this.server): string {
    const b64 = (s: string) => Buffer.from(s).toString('base64');
    return stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [
        {
          name: 'kvpool',
          cluster: { server, 'certificate-authority-data': b64(this.clientTls.ca) },
        },
      ],
      users: [
        {
          name: 'kvpool-admin',
          user: {
            'client-certificate-data': b64(this.clientTls.cert),
            'client-key-data': b64(this.clientTls.key),
          },
        },
      ],
      contexts: [{ name: 'kvpool', context: { cluster: 'kvpool', user: 'kvpool-admin' } }],
      'current-context': 'kvpool',
    });
  }

  /**
   * Stops etcd (SIGKILL: a crash) while the API server keeps running; startEtcd() brings it back on
   * the same ports and data.
   */
  async stopEtcd(signal: 'SIGTERM' | 'SIGKILL' = 'SIGKILL'): Promise<void> {
    this.etcd?.signal(signal);
    await this.etcd?.stop();
  }

  async startEtcd(): Promise<void> {
    const { etcdClient, etcdPeer } = this.ports;
    const client = `http://127.0.0.1:${etcdClient}`;
    const peer = `http://127.0.0.1:${etcdPeer}`;
    this.etcd = startProcess('etcd', etcdBinary(), {
      logDir: this.logDir,
      args: [
        '--name=default',
        `--data-dir=${join(this.dir, 'etcd')}`,
        `--listen-client-urls=${client}`,
        `--advertise-client-urls=${client}`,
        `--listen-peer-urls=${peer}`,
        `--initial-advertise-peer-urls=${peer}`,
        `--initial-cluster=default=${peer}`,
        '--unsafe-no-fsync=true',
        '--log-level=warn',
      ],
    });
    await waitFor(
      async () => {
        this.etcd!.assertRunning();
        const res = await fetch(`${client}/health`);
        return res.ok ? true : undefined;
      },
      { what: `etcd on ${client} (log: ${this.etcd.logFile})`, timeoutMs: this.timeout() },
    );
  }

  /** Starts kube-apiserver (again, after stopApiserver) on the same port and waits for /readyz. */
  async startApiserver(): Promise<void> {
    this.apiserver = await this.launchApiserver('kube-apiserver', this.ports.apiserver);
  }

  /**
   * A second kube-apiserver on the same etcd (as in an HA control plane), with its own kubeconfig.
   * Stop it with the returned function; stop() also stops it.
   */
  async addApiserver(): Promise<{ kubeconfigPath: string; stop: () => Promise<void> }> {
    const port = await freePort();
    const name = `kube-apiserver-${port}`;
    const proc = await this.launchApiserver(name, port);
    this.extras.push(proc);
    const kubeconfigPath = join(this.dir, `kubeconfig-${port}`);
    writeFileSync(kubeconfigPath, this.kubeconfig(`https://${this.address}:${port}`), { mode: 0o600 });
    return { kubeconfigPath, stop: async () => void (await proc.stop()) };
  }

  private auditFlags(): string[] {
    const policy = join(this.dir, 'audit-policy.yaml');
    writeFileSync(policy, stringify(auditPolicy));
    return [
      `--audit-policy-file=${policy}`,
      `--audit-log-path=${this.auditLogPath}`,
      '--audit-log-mode=blocking',
    ];
  }

  /** Flags for a cluster with nodes: its address and ranges, node authorization, kubelet access. */
  private networkFlags(): string[] {
    const net = this.options.network;
    const f = this.files;
    if (!net) {
      return [
        '--bind-address=127.0.0.1',
        '--advertise-address=127.0.0.1',
        '--service-cluster-ip-range=10.0.0.0/24',
        '--authorization-mode=RBAC',
      ];
    }
    return [
      `--bind-address=${net.address}`,
      `--advertise-address=${net.address}`,
      `--service-cluster-ip-range=${net.serviceCidr}`,
      '--authorization-mode=Node,RBAC',
      '--enable-admission-plugins=NodeRestriction',
      `--kubelet-client-certificate=${f.kubeletClientCert}`,
      `--kubelet-client-key=${f.kubeletClientKey}`,
      '--kubelet-preferred-address-types=InternalIP',
      // Webhooks are called at their Pods' addresses: Service addresses exist only inside the nodes.
      '--enable-aggregator-routing=true',
    ];
  }

  private async launchApiserver(name: string, port: number): Promise<ManagedProcess> {
    const f = this.files;
    const proc = startProcess(name, kubeBinary('kube-apiserver'), {
      logDir: this.logDir,
      args: [
        `--etcd-servers=http://127.0.0.1:${this.ports.etcdClient}`,
        `--secure-port=${port}`,
        ...this.networkFlags(),
        `--tls-cert-file=${f.apiserverCert}`,
        `--tls-private-key-file=${f.apiserverKey}`,
        `--client-ca-file=${f.ca}`,
        `--service-account-issuer=https://kubernetes.default.svc`,
        `--service-account-key-file=${f.saPublic}`,
        `--service-account-signing-key-file=${f.saPrivate}`,
        '--allow-privileged=true',
        '--enable-priority-and-fairness=false',
        '--profiling=false',
        // Without a controller manager nothing creates the default ServiceAccount Pods would need.
        ...(this.options.controllers ? [] : ['--disable-admission-plugins=ServiceAccount']),
        ...(this.options.auditWrites ? this.auditFlags() : []),
      ],
    });
    await waitFor(
      async () => {
        proc.assertRunning();
        return (await this.get('/readyz', port)) === 200 ? true : undefined;
      },
      { what: `${name} on :${port} (log: ${proc.logFile})`, timeoutMs: this.timeout() },
    );
    return proc;
  }

  async stopApiserver(): Promise<void> {
    await this.apiserver?.stop();
  }

  /**
   * Stops (SIGSTOP) or resumes (SIGCONT) the API server's process: while stopped, connections are
   * accepted by the kernel and calls hang, as with an overloaded or partitioned API server.
   */
  freezeApiserver(frozen: boolean): void {
    this.apiserver?.signal(frozen ? 'SIGSTOP' : 'SIGCONT');
  }

  private async startControllers(): Promise<void> {
    const f = this.files;
    const net = this.options.network;
    const kcmPort = await freePort();
    const schedulerPort = await freePort();
    const kcm = startProcess('kube-controller-manager', kubeBinary('kube-controller-manager'), {
      logDir: this.logDir,
      args: [
        `--kubeconfig=${f.kubeconfig}`,
        '--leader-elect=false',
        `--secure-port=${kcmPort}`,
        '--bind-address=127.0.0.1',
        `--controllers=${[...controllerSet, ...(net ? nodeControllers : [])].join(',')}`,
        ...(net
          ? [
              '--allocate-node-cidrs=true',
              `--cluster-cidr=${net.clusterCidr}`,
              '--node-cidr-mask-size=24',
              `--service-cluster-ip-range=${net.serviceCidr}`,
              // A node whose kubelet stops is NotReady within seconds, as the failover tests need.
              '--node-monitor-grace-period=20s',
            ]
          : []),
        `--service-account-private-key-file=${f.saPrivate}`,
        `--root-ca-file=${f.ca}`,
        '--kube-api-qps=200',
        '--kube-api-burst=400',
        '--concurrent-gc-syncs=5',
      ],
    });
    const scheduler = startProcess('kube-scheduler', kubeBinary('kube-scheduler'), {
      logDir: this.logDir,
      args: [
        `--kubeconfig=${f.kubeconfig}`,
        '--leader-elect=false',
        `--secure-port=${schedulerPort}`,
        '--bind-address=127.0.0.1',
        '--kube-api-qps=200',
        '--kube-api-burst=400',
      ],
    });
    this.extras.push(kcm, scheduler);
    for (const [proc, port] of [
      [kcm, kcmPort],
      [scheduler, schedulerPort],
    ] as const) {
      await waitFor(
        async () => {
          proc.assertRunning();
          return (await this.get('/healthz', port, false)) === 200 ? true : undefined;
        },
        { what: `${proc.name} /healthz on :${port} (log: ${proc.logFile})`, timeoutMs: this.timeout() },
      );
    }
  }

  /** GET a path over HTTPS; on the apiserver by default, with the admin client certificate. */
  private get(path: string, port = this.ports.apiserver, verify = true): Promise<number> {
    return new Promise((resolve, reject) => {
      const req = request(
        {
          // The API servers listen on the cluster's address, the other components on loopback.
          host: verify ? this.address : '127.0.0.1',
          port,
          path,
          method: 'GET',
          ...(verify ? this.clientTls : {}),
          rejectUnauthorized: verify,
          timeout: 2000,
        },
        (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        },
      );
      req.on('timeout', () => req.destroy(new Error('timeout')));
      req.on('error', reject);
      req.end();
    });
  }

  /** Stops every process (reverse order) and removes the working directory if it was temporary. */
  async stop(): Promise<void> {
    for (const p of [...this.extras].reverse()) await p.stop();
    await this.apiserver?.stop();
    await this.etcd?.stop();
    if (this.ownsDir) rmSync(this.dir, { recursive: true, force: true });
  }
}
