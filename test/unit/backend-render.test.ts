// The managed backend's children, pinned as golden files: the exact intent the operator applies.
// Regenerate after an intended change with UPDATE_GOLDEN=1 and review the diff.

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { EnvVar } from 'kubernetes-types/core/v1.js';
import type { KVCacheBackendSpec, MemberGroup } from '../../src/api/kvcache-backend.ts';
import type { KVCacheBackend } from '../../src/api/types.ts';
import { podSpecHash, podSpecHashAnnotation } from '../../src/controllers/backend/pod-spec-hash.ts';
import {
  type BackendRenderContext,
  renderBackend,
  resolveImages,
} from '../../src/controllers/backend/render.ts';
import { renderMemberDaemonSet } from '../../src/controllers/backend/render-members.ts';
import type { KubeObject } from '../../src/kube/object.ts';
import { backendSelector as backendSelectorOf } from '../../src/vocabulary/store-objects.ts';
import { goldenTests } from './golden.ts';

const goldenDir = new URL('./golden/backend/', import.meta.url);
const ctx: BackendRenderContext = {
  namespace: 'gpustack-system',
  defaultImage: 'kvpool/kvpool-store:0.1.0-mooncake0.3.13.post1',
  boundNamespaces: ['team-a', 'team-b'],
};

type Managed = NonNullable<KVCacheBackendSpec['connection']['managed']>;
type Container = { name: string; image: string; imagePullPolicy: string; args: string[]; env: EnvVar[] };
type PodTemplate = {
  metadata: { annotations?: Record<string, string> };
  spec: Record<string, unknown> & {
    nodeSelector?: Record<string, string>;
    initContainers?: Array<{ name: string; command: string[] }>;
    containers: Array<Container & Record<string, unknown>>;
  };
};
type Workload = KubeObject & { spec: Record<string, unknown> & { template: PodTemplate } };

// Leader defaults written out, as the apiserver stores a `leader: {}`.
const storedLeader: Managed['leader'] = {
  replicas: 1,
  electionBackend: 'Kubernetes',
  memberAddressing: 'Service',
  allocationStrategy: 'FreeRatioFirst',
  multiTenancy: true,
};
const linuxDram: MemberGroup = {
  nodeSelector: { 'kubernetes.io/os': 'linux' },
  medium: 'DRAM',
  capacityPerMember: '8Gi',
};

function backend(
  name: string,
  managed: Partial<Managed>,
  spec: Partial<KVCacheBackendSpec> = {},
): KVCacheBackend {
  return {
    apiVersion: 'worker.gpustack.ai/v1',
    kind: 'KVCacheBackend',
    metadata: { name, uid: `uid-${name}` },
    spec: {
      type: 'Mooncake',
      transport: { protocol: 'Auto' },
      ...spec,
      connection: { managed: { leader: storedLeader, members: [linuxDram], ...managed } },
    },
  };
}

function withLeader(b: KVCacheBackend, leader: Partial<Managed['leader']>): KVCacheBackend {
  const managed = b.spec.connection.managed!;
  return backend(b.metadata.name!, { ...managed, leader: { ...managed.leader, ...leader } }, b.spec);
}

const step1 = backend('mooncake-dram', {});
const step4 = withLeader(step1, { replicas: 3 });
const step5 = backend('mooncake-disk', {
  members: [
    {
      nodeSelector: { kvcache: 'true' },
      medium: 'DRAM',
      capacityPerMember: '8Gi',
      localDisks: [{ path: '/var/lib/kvcache', capacity: '100Gi', cleanAfterDelete: false }],
    },
  ],
});
const unelected = withLeader(
  backend('mooncake-solo', {}, { image: 'registry.example.com/kvpool-store:latest' }),
  {
    electionBackend: 'None',
    multiTenancy: false,
    allocationStrategy: 'Random',
    extraArgs: ['-client_ttl=20'],
    extraEnv: [{ name: 'GLOG_v', value: '1' }],
  },
);
const rdma = backend(
  'mooncake-rdma',
  {
    members: [
      {
        ...linuxDram,
        extraArgs: ['--max_mr_size=1073741824'],
        extraEnv: [{ name: 'MC_MS_AUTO_DISC', value: '1' }],
      },
      {
        nodeSelector: { 'gpustack.ai/fabric': 'rdma' },
        medium: 'VRAM',
        capacityPerMember: '16Gi',
        localBufferSize: '128Mi',
        image: 'registry.example.com/kvpool-store:cuda',
        transport: { protocol: 'RDMA' },
        fabricInterfaceCount: 2,
        hostPaths: [
          { path: '/opt/rdma-core', mountPath: '/opt/rdma-core', type: 'Directory', readOnly: true },
        ],
        securityContext: {
          runAsUser: 65532,
          capabilities: { add: ['SYS_PTRACE', 'IPC_LOCK'], drop: ['ALL'] },
        },
        runtimeClassName: 'nvidia',
      },
    ],
  },
  { imagePullSecrets: [{ name: 'registry-creds' }] },
);
const leaseAddressed = withLeader(backend('mooncake-lease', {}), { memberAddressing: 'Lease' });
const replicated = withLeader(backend('mooncake-oplog', {}), { replicas: 3, electionBackend: 'Etcd' });
const externalEtcd = withLeader(backend('mooncake-ext-etcd', {}), {
  replicas: 2,
  electionBackend: 'Etcd',
  etcd: {
    external: {
      endpoints: ['https://etcd-a.example:2379', 'https://etcd-b.example:2379'],
      clientSecretName: 'store-etcd-client',
    },
  },
});

const goldens: Record<string, KVCacheBackend> = {
  'step-1-dram': step1,
  'step-4-ha': step4,
  'step-5-disk-tier': step5,
  'no-election-no-tenancy': unelected,
  'rdma-fabric-security-context': rdma,
  'lease-addressing': leaseAddressed,
  'etcd-replicated-metadata': replicated,
  'etcd-external': externalEtcd,
};

function workload(obj: KubeObject): Workload {
  return obj as Workload;
}

function container(obj: KubeObject): Container & Record<string, unknown> {
  return workload(obj).spec.template.spec.containers[0]!;
}

function envValue(obj: KubeObject, name: string): string | undefined {
  return container(obj).env.find((e) => e.name === name)?.value;
}

function memberHash(b: KVCacheBackend, index = 0): string {
  return workload(renderMemberDaemonSet(b, index, ctx)).spec.template.metadata.annotations![
    podSpecHashAnnotation
  ]!;
}

function withGroup(b: KVCacheBackend, change: Partial<MemberGroup>, index = 0): KVCacheBackend {
  const managed = b.spec.connection.managed!;
  const members = managed.members.map((g, i) => (i === index ? { ...g, ...change } : g));
  return backend(b.metadata.name!, { ...managed, members }, b.spec);
}

describe('backend render goldens', () => {
  goldenTests(goldenDir, goldens, (b) => renderBackend(b, ctx));
});

describe('member pod-spec hash', () => {
  it('stays put when only the nodeSelector changes, so widening a group restarts nobody', () => {
    assert.equal(
      memberHash(withGroup(step1, { nodeSelector: { 'kubernetes.io/os': 'linux', zone: 'a' } })),
      memberHash(step1),
    );
  });

  it('moves when the image or the env changes, so every member is recreated', () => {
    const before = memberHash(step1);
    assert.notEqual(memberHash(withGroup(step1, { image: 'registry.example.com/kvpool-store:2' })), before);
    assert.notEqual(
      memberHash(withGroup(step1, { extraEnv: [{ name: 'MC_RPC_TIMEOUT_MS', value: '60000' }] })),
      before,
    );
    assert.notEqual(memberHash(withGroup(step1, { capacityPerMember: '16Gi' })), before);
  });

  it('is the hash of the template without its own annotation', () => {
    const template = workload(renderMemberDaemonSet(step1, 0, ctx)).spec.template;
    assert.equal(podSpecHash(template), template.metadata.annotations![podSpecHashAnnotation]);
    assert.match(podSpecHash(template), /^[0-9a-f]{64}$/);
  });
});

describe('replicated metadata (electionBackend Etcd)', () => {
  it('runs a master on every replica, writing and following the OpLog through local TLS tunnels', () => {
    const r = renderBackend(replicated, ctx);
    const args = container(r.leaderDeployment).args as string[];
    assert.ok(args.includes('--election=Etcd'));
    assert.ok(!args.some((a) => a.startsWith('--lease')), 'no Lease flags');
    const tunnels = args.filter((a) => a.startsWith('--etcd-tunnel='));
    assert.deepEqual(
      tunnels,
      [0, 1, 2].map(
        (i) =>
          `--etcd-tunnel=${23790 + i}=https://mooncake-oplog-etcd-${i}.mooncake-oplog-etcd.${ctx.namespace}.svc:2379`,
      ),
    );
    assert.ok(args.includes('-enable_oplog=true') && args.includes('-enable_ha=true'));
    assert.ok(args.includes('-etcd_endpoints=127.0.0.1:23790;127.0.0.1:23791;127.0.0.1:23792'));
    assert.equal(r.lease, undefined);
    assert.deepEqual(r.rbac, [], 'the leaders need no account');
    assert.equal(workload(r.leaderDeployment).spec.template.spec.automountServiceAccountToken, false);
  });

  it('runs a three-member etcd with a volume each, reachable on its client port from the leaders alone', () => {
    const r = renderBackend(replicated, ctx);
    const sts = r.etcd!.statefulSet as unknown as { spec: Record<string, unknown> };
    assert.equal(sts.spec.replicas, 3);
    assert.equal(sts.spec.podManagementPolicy, 'Parallel');
    const policy = r.networkPolicies.find((p) => p.metadata.name === 'mooncake-oplog-etcd')!;
    assert.deepEqual(policy.spec!.ingress![0], {
      from: [{ podSelector: { matchLabels: backendSelectorOf('mooncake-oplog', 'leader') } }],
      ports: [{ protocol: 'TCP', port: 2379 }],
    });
  });

  it('runs no etcd for an external one, and mounts the Secret its user named', () => {
    const r = renderBackend(externalEtcd, ctx);
    assert.equal(r.etcd, undefined);
    assert.ok(!r.networkPolicies.some((p) => p.metadata.name?.endsWith('-etcd')));
    const volumes = workload(r.leaderDeployment).spec.template.spec.volumes as {
      name: string;
      secret?: { secretName: string };
    }[];
    assert.equal(volumes.find((v) => v.name === 'etcd-client')?.secret?.secretName, 'store-etcd-client');
  });
});

describe('leader Deployment', () => {
  it('starts the new replica beside a single elected leader, which the operator then asks to step down', () => {
    const spec = workload(renderBackend(step1, ctx).leaderDeployment).spec;
    assert.equal(spec.replicas, 1);
    assert.deepEqual(spec.strategy, {
      type: 'RollingUpdate',
      rollingUpdate: { maxSurge: 1, maxUnavailable: 0 },
    });
    assert.equal(spec.progressDeadlineSeconds, 2147483647);
  });

  it('replaces the standbys first and keeps the serving leader (the only available replica)', () => {
    const spec = workload(renderBackend(step4, ctx).leaderDeployment).spec;
    assert.equal(spec.replicas, 3);
    assert.deepEqual(spec.strategy, {
      type: 'RollingUpdate',
      rollingUpdate: { maxSurge: 1, maxUnavailable: 2 },
    });
    assert.equal(spec.progressDeadlineSeconds, 2147483647);
  });

  it('recreates a leader without an election: two unelected masters must never overlap', () => {
    const spec = workload(renderBackend(unelected, ctx).leaderDeployment).spec;
    assert.deepEqual(spec.strategy, { type: 'Recreate' });
  });

  it('holds the replica override while an elected template is first written', () => {
    const spec = workload(renderBackend(step4, { ...ctx, leaderReplicasOverride: 1 }).leaderDeployment).spec;
    assert.equal(spec.replicas, 1);
    assert.deepEqual(spec.strategy, { type: 'Recreate' });
  });

  it('keeps an object being read for 5 min and a silent client for 60 s, and lets extraArgs override both', () => {
    const masterArgs = (b: KVCacheBackend) => {
      const args = container(renderBackend(b, ctx).leaderDeployment).args as string[];
      return args.slice(args.indexOf('--') + 1);
    };
    const flags = masterArgs(step1);
    assert.ok(flags.includes('-default_kv_lease_ttl=5m'));
    assert.ok(flags.includes('-client_ttl=60'));
    // gflags keeps the last value of a repeated flag: the user's entries come after the operator's.
    const overridden = masterArgs(
      withLeader(step1, { extraArgs: ['-client_ttl=20', '-default_kv_lease_ttl=30s'] }),
    );
    assert.deepEqual(overridden.slice(-2), ['-client_ttl=20', '-default_kv_lease_ttl=30s']);
    assert.ok(overridden.indexOf('-client_ttl=60') < overridden.indexOf('-client_ttl=20'));
  });

  it('runs one unelected leader with no account and no RBAC', () => {
    const rendered = renderBackend(withLeader(unelected, { replicas: 3 }), ctx);
    const pod = workload(rendered.leaderDeployment).spec.template.spec;
    assert.equal(workload(rendered.leaderDeployment).spec.replicas, 1);
    assert.equal(pod.automountServiceAccountToken, false);
    assert.equal(pod.serviceAccountName, undefined);
    assert.deepEqual(rendered.rbac, []);
  });
});

describe('member DaemonSet', () => {
  it('requests the segment plus the local buffer as memory, limited a GiB above', () => {
    const group = { ...linuxDram, localBufferSize: '64Mi' };
    const resources = container(renderMemberDaemonSet(withGroup(step1, group), 0, ctx)).resources;
    assert.deepEqual(
      resources,
      { requests: { cpu: '250m', memory: '8256Mi' }, limits: { memory: '9280Mi' } },
      '8Gi of segment plus 64Mi of buffer',
    );
  });

  it('limits a member above the store buffers it fills unasked: the default local buffer, a tier’s staging buffer', () => {
    const disk = step5.spec.connection.managed!.members[0]!.localDisks![0]!;
    const small = { ...linuxDram, capacityPerMember: '64Mi', localDisks: [disk] };
    const resources = container(renderMemberDaemonSet(withGroup(step5, small), 0, ctx)).resources;
    assert.deepEqual(
      resources,
      { requests: { cpu: '250m', memory: '64Mi' }, limits: { memory: '3392Mi' } },
      '64Mi of segment, 1Gi of default local buffer, 1.25Gi of staging buffer and 1Gi for the process',
    );
  });

  it('addresses the leader by Service, or by Lease only while an election runs', () => {
    const master = (b: KVCacheBackend) => envValue(renderMemberDaemonSet(b, 0, ctx), 'MOONCAKE_MASTER');
    assert.equal(master(step1), 'mooncake-dram-leader.gpustack-system.svc:50051');
    assert.equal(master(leaseAddressed), 'k8s://gpustack-system/mooncake-lease-leader');
    const leaseWithoutElection = withLeader(leaseAddressed, { electionBackend: 'None' });
    assert.equal(master(leaseWithoutElection), 'mooncake-lease-leader.gpustack-system.svc:50051');
  });

  it('renders tier eviction settings the store understands', () => {
    const disk = step5.spec.connection.managed!.members[0]!.localDisks![0]!;
    const tiered = (eviction: typeof disk.eviction, keyLimit?: number) =>
      renderMemberDaemonSet(withGroup(step5, { localDisks: [{ ...disk, eviction, keyLimit }] }), 0, ctx);
    const lru = tiered({ policy: 'LRU', watermark: { high: 90, low: 75 } }, 4096);
    assert.equal(envValue(lru, 'MOONCAKE_OFFLOAD_BUCKET_EVICTION_POLICY'), 'lru');
    assert.equal(envValue(lru, 'MOONCAKE_OFFLOAD_DISK_EVICTION_HIGH_WATERMARK_RATIO'), '0.90');
    assert.equal(envValue(lru, 'MOONCAKE_OFFLOAD_DISK_EVICTION_LOW_WATERMARK_RATIO'), '0.75');
    assert.equal(envValue(lru, 'MOONCAKE_OFFLOAD_TOTAL_KEYS_LIMIT'), '4096');
    const off = tiered({ enabled: false });
    assert.equal(envValue(off, 'MOONCAKE_OFFLOAD_BUCKET_EVICTION_POLICY'), 'none');
    assert.equal(envValue(off, 'MOONCAKE_OFFLOAD_ENABLE_DISK_WATERMARK_EVICTION'), 'false');
  });

  it('gives a tier group the scale-in grace on top of the shutdown budget', () => {
    const managed = step5.spec.connection.managed!;
    const graced = backend('mooncake-disk', { ...managed, scaleIn: { gracePeriodSeconds: 120 } });
    const ds = workload(renderMemberDaemonSet(graced, 0, ctx));
    assert.equal(ds.spec.template.spec.terminationGracePeriodSeconds, 180);
    assert.match(JSON.stringify(container(ds).lifecycle), /grace_period_seconds\\": 120}'.*timeout=130\)/);
  });

  it('offloads on eviction unless the tier writes through, and marks the tier with the backend UID', () => {
    const disk = step5.spec.connection.managed!.members[0]!.localDisks![0]!;
    const masterArgs = (b: KVCacheBackend) => container(renderBackend(b, ctx).leaderDeployment).args;
    assert.ok(masterArgs(step5).includes('-offload_on_evict=true'), 'OnEviction by default');
    const through = withGroup(step5, { localDisks: [{ ...disk, offload: 'WriteThrough' }] });
    assert.ok(masterArgs(through).includes('-enable_offload=true'));
    assert.ok(masterArgs(through).includes('-offload_on_evict=false'), 'every put is copied to the tier');
    assert.equal(
      envValue(renderMemberDaemonSet(step5, 0, ctx), 'MOONCAKE_OFFLOAD_HEARTBEAT_INTERVAL_SECONDS'),
      undefined,
    );
    assert.equal(
      envValue(renderMemberDaemonSet(through, 0, ctx), 'MOONCAKE_OFFLOAD_HEARTBEAT_INTERVAL_SECONDS'),
      '1',
      'a new leader learns the tier within a second',
    );
    const ds = workload(renderMemberDaemonSet(through, 0, ctx));
    const init = (ds.spec.template.spec as unknown as { initContainers: Array<{ env: EnvVar[] }> })
      .initContainers[0]!;
    assert.deepEqual(
      init.env.map((e) => [e.name, e.value]),
      [
        ['KVPOOL_TIER_OWNER', 'uid-mooncake-disk'],
        ['KVPOOL_TIER_BACKEND', 'gpustack-system/mooncake-disk'],
        ['KVPOOL_TIER_FOREIGN_CONTENT', 'Refuse'],
      ],
    );
  });

  it('quotes a tier path with a single quote for the survey shell', () => {
    const disk = { path: "/var/lib/it's", cleanAfterDelete: false };
    const ds = workload(renderMemberDaemonSet(withGroup(step5, { localDisks: [disk] }), 0, ctx));
    const init = (ds.spec.template.spec as { initContainers: Array<{ command: string[] }> })
      .initContainers[0]!;
    assert.match(init.command[2]!, /^d='\/var\/lib\/it'\\''s'; /);
  });
});

describe('resolveImages', () => {
  it('prefers the group image, then spec.image, then the Setting', () => {
    const images = resolveImages(rdma, ctx.defaultImage);
    assert.equal(images.leader, ctx.defaultImage);
    assert.deepEqual(images.members, [ctx.defaultImage, 'registry.example.com/kvpool-store:cuda']);
  });

  it('pulls floating tags always and pinned ones if not present', () => {
    const policy = (image: string, pull?: KVCacheBackendSpec['imagePullPolicy']) =>
      resolveImages(backend('b', {}, { image, imagePullPolicy: pull }), ctx.defaultImage).pullPolicy;
    assert.equal(policy('store:latest'), 'Always');
    assert.equal(policy('registry.example.com:5000/store'), 'Always');
    assert.equal(policy('store:1.0'), 'IfNotPresent');
    assert.equal(policy(`store@sha256:${'a'.repeat(64)}`), 'IfNotPresent');
    assert.equal(policy('store:latest', 'Never'), 'Never');
  });
});
