// Least privilege in what a managed backend renders: accounts that touch one Lease, the admin port off
// the engines' Service, NetworkPolicies, container security contexts, resources, spread and the PDB.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { MemberGroup } from '../../src/api/kvcache-backend.ts';
import type { KVCacheBackend } from '../../src/api/types.ts';
import { type RenderedBackend, renderBackend } from '../../src/controllers/backend/render.ts';
import { storeSecurityContext } from '../../src/controllers/backend/render-hardening.ts';
import type { KubeObject } from '../../src/kube/object.ts';
import { backend, group } from '../builders/index.ts';

const ctx = { namespace: 'gpustack-system', defaultImage: 'kvpool/kvpool-store:test', boundNamespaces: [] };
// biome-ignore lint/suspicious/noExplicitAny: reading deep into rendered objects
type Loose = any;
const spec = (o: KubeObject | undefined): Loose => (o as Loose)?.spec;
const podSpec = (o: KubeObject): Loose => spec(o).template.spec;

function render(change: (b: KVCacheBackend) => void = () => {}): RenderedBackend {
  const b = backend();
  b.metadata = { ...b.metadata, uid: 'uid-1' };
  change(b);
  return renderBackend(b, ctx);
}
const leaderOf = (b: KVCacheBackend) => b.spec.connection.managed!.leader;
const withGroups =
  (...groups: MemberGroup[]) =>
  (b: KVCacheBackend) => {
    b.spec.connection.managed!.members = groups;
  };
type Leader = NonNullable<KVCacheBackend['spec']['connection']['managed']>['leader'];
const withLeader = (leader: Partial<Leader>) => (b: KVCacheBackend) => {
  Object.assign(leaderOf(b), leader);
};

describe('accounts', () => {
  const leaseRule = {
    apiGroups: ['coordination.k8s.io'],
    resources: ['leases'],
    resourceNames: ['mooncake-dram-leader'],
    verbs: ['get', 'update', 'patch'],
  };
  const leaderRules = (b: RenderedBackend) =>
    (b.rbac.find((o) => o.kind === 'Role' && o.metadata.name === 'mooncake-dram-leader') as Loose).rules;
  const storeFlags = (b: RenderedBackend) => {
    const args: string[] = podSpec(b.leaderDeployment).containers[0].args;
    return args.slice(0, args.indexOf('--'));
  };

  it('let the leader get, take (update) and renew (patch) its own Lease and get its seed, nothing else (no create, no Pods)', () => {
    const rendered = render();
    assert.deepEqual(leaderRules(rendered), [
      leaseRule,
      {
        apiGroups: [''],
        resources: ['configmaps'],
        resourceNames: ['mooncake-dram-tenant-quota-policy'],
        verbs: ['get'],
      },
    ]);
    // The one ConfigMap the program reads is the one the Role names.
    assert.ok(
      storeFlags(rendered).includes(
        '--policy-seed-configmap=gpustack-system/mooncake-dram-tenant-quota-policy',
      ),
    );
  });

  it('let a leader without tenancy touch its Lease alone: it reads no seed', () => {
    const rendered = render(withLeader({ multiTenancy: false }));
    assert.deepEqual(leaderRules(rendered), [leaseRule]);
    assert.deepEqual(
      storeFlags(rendered).filter((f) => f.startsWith('--policy')),
      [],
    );
  });

  it('give members an account (read that Lease) only when they follow the Lease', () => {
    const byService = render();
    assert.deepEqual(
      byService.rbac.map((o) => `${o.kind}/${o.metadata.name}`).filter((n) => n.includes('member')),
      [],
    );
    assert.equal(podSpec(byService.memberDaemonSets[0]!).automountServiceAccountToken, false);
    const byLease = render(withLeader({ memberAddressing: 'Lease' }));
    const role = byLease.rbac.find((o) => o.kind === 'Role' && o.metadata.name === 'mooncake-dram-member');
    assert.deepEqual((role as Loose).rules[0].verbs, ['get']);
    assert.deepEqual((role as Loose).rules[0].resourceNames, ['mooncake-dram-leader']);
    assert.equal(podSpec(byLease.memberDaemonSets[0]!).automountServiceAccountToken, true);
  });

  it('mount no token by default: the Pods that need one ask for it', () => {
    for (const sa of render().rbac.filter((o) => o.kind === 'ServiceAccount'))
      assert.equal((sa as Loose).automountServiceAccountToken, false);
    assert.equal(podSpec(render().leaderDeployment).automountServiceAccountToken, true);
  });

  it('include the Lease, created by the operator, naming the Pods asked not to lead', () => {
    const b = backend();
    b.metadata = { ...b.metadata, uid: 'uid-1' };
    const leaderStepDown = ['mooncake-dram-leader-a', 'mooncake-dram-leader-b'];
    const lease = renderBackend(b, { ...ctx, leaderStepDown }).lease!;
    assert.deepEqual(lease.metadata.annotations, {
      'kvcache.gpustack.ai/step-down': 'mooncake-dram-leader-a,mooncake-dram-leader-b',
    });
    assert.equal((lease as Loose).spec, undefined, 'the store writes the spec');
    assert.equal(render().lease!.metadata.annotations, undefined);
    assert.equal(render(withLeader({ electionBackend: 'None' })).lease, undefined);
  });
});

describe('Services', () => {
  it('give engines the RPC port alone; the admin port has its own Service', () => {
    const r = render();
    assert.deepEqual(spec(r.leaderService).ports, [
      { name: 'rpc', port: 50051, targetPort: 'rpc', protocol: 'TCP' },
    ]);
    assert.equal(r.adminService.metadata.name, 'mooncake-dram-admin');
    assert.deepEqual(spec(r.adminService).ports, [
      { name: 'admin', port: 9003, targetPort: 'admin', protocol: 'TCP' },
    ]);
    assert.deepEqual(spec(r.adminService).selector, spec(r.leaderService).selector);
  });
});

describe('NetworkPolicies', () => {
  const [, members, cleanup] = render((b) =>
    withGroups(group(), group({ medium: 'VRAM' }))(b),
  ).networkPolicies;

  it('admit the members’ transfer ports alone, for every group (who may: store-network-policies.test.ts)', () => {
    assert.deepEqual(
      spec(members).ingress.map((rule: Loose) => rule.ports),
      [
        [
          { protocol: 'TCP', port: 15000, endPort: 17000 },
          { protocol: 'TCP', port: 12300, endPort: 14300 },
        ],
      ],
    );
    assert.deepEqual(spec(members).podSelector.matchExpressions, [
      { key: 'app.kubernetes.io/component', operator: 'In', values: ['member-0', 'member-1'] },
    ]);
  });

  it('cut a tier cleanup Pod off the network both ways', () => {
    assert.deepEqual(spec(cleanup).policyTypes, ['Ingress', 'Egress']);
    assert.equal(spec(cleanup).ingress, undefined);
    assert.equal(spec(cleanup).egress, undefined);
    assert.equal(spec(cleanup).podSelector.matchLabels['app.kubernetes.io/component'], 'tier-cleanup');
  });
});

describe('containers', () => {
  const restricted = {
    allowPrivilegeEscalation: false,
    capabilities: { drop: ['ALL'] },
    readOnlyRootFilesystem: true,
    runAsNonRoot: true,
    runAsUser: 65532,
    seccompProfile: { type: 'RuntimeDefault' },
  };

  it('run the leader restricted, with requests, a memory limit and a scratch /tmp', () => {
    const c = podSpec(render().leaderDeployment).containers[0];
    assert.deepEqual(c.securityContext, restricted);
    assert.deepEqual(c.resources, { requests: { cpu: '250m', memory: '256Mi' }, limits: { memory: '2Gi' } });
    assert.ok(c.volumeMounts.some((m: Loose) => m.mountPath === '/tmp'));
  });

  it('run a TCP member restricted, with a liveness probe once its port first opened', () => {
    const c = podSpec(render().memberDaemonSets[0]!).containers[0];
    assert.deepEqual(c.securityContext, restricted);
    assert.deepEqual(c.startupProbe, { tcpSocket: { port: 8080 }, periodSeconds: 5, failureThreshold: 120 });
    assert.deepEqual(c.livenessProbe, { tcpSocket: { port: 8080 }, periodSeconds: 10, failureThreshold: 6 });
  });

  it('give an RDMA member only the fabric capabilities, as root (where they take effect)', () => {
    const r = render((b) => withGroups(group(), group({ transport: { protocol: 'RDMA' } }))(b));
    assert.deepEqual(podSpec(r.memberDaemonSets[1]!).containers[0].securityContext, {
      ...restricted,
      capabilities: { add: ['IPC_LOCK', 'SYS_RESOURCE'], drop: ['ALL'] },
      runAsNonRoot: false,
      runAsUser: 0,
    });
  });

  it('let the group’s own fields win, keeping a context the apiserver accepts', () => {
    assert.deepEqual(storeSecurityContext(['IPC_LOCK'], { runAsUser: 1000 }), {
      ...restricted,
      capabilities: { add: ['IPC_LOCK'], drop: ['ALL'] },
      runAsUser: 1000,
    });
    const privileged = storeSecurityContext([], { privileged: true });
    assert.equal(privileged.allowPrivilegeEscalation, undefined, 'refused beside privileged');
    assert.equal(
      storeSecurityContext([], { capabilities: { add: ['SYS_ADMIN'] } }).allowPrivilegeEscalation,
      undefined,
    );
    assert.equal(storeSecurityContext(['IPC_LOCK'], { runAsNonRoot: true }).runAsUser, 65532);
  });
});

describe('leader placement and disruption', () => {
  it('spreads elected replicas across nodes (same template only, tainted nodes excluded)', () => {
    const r = render(withLeader({ replicas: 3 }));
    assert.deepEqual(podSpec(r.leaderDeployment).topologySpreadConstraints, [
      {
        maxSkew: 1,
        topologyKey: 'kubernetes.io/hostname',
        whenUnsatisfiable: 'DoNotSchedule',
        labelSelector: { matchLabels: spec(r.leaderDeployment).selector.matchLabels },
        matchLabelKeys: ['pod-template-hash'],
        nodeTaintsPolicy: 'Honor',
      },
    ]);
    const single = podSpec(render().leaderDeployment).topologySpreadConstraints;
    assert.deepEqual(
      single,
      podSpec(r.leaderDeployment).topologySpreadConstraints,
      'scaling changes no template',
    );
    const unelected = render(withLeader({ electionBackend: 'None' }));
    assert.equal(podSpec(unelected.leaderDeployment).topologySpreadConstraints, undefined);
  });

  it('keeps the serving leader from eviction when standbys exist, and allows it for a single leader', () => {
    const ha = spec(render(withLeader({ replicas: 3 })).disruptionBudget);
    assert.equal(ha.minAvailable, 1);
    assert.equal(
      ha.unhealthyPodEvictionPolicy,
      'AlwaysAllow',
      'standbys are never ready, and always evictable',
    );
    assert.equal(spec(render().disruptionBudget).maxUnavailable, 1);
    assert.equal(spec(render().disruptionBudget).minAvailable, undefined);
  });
});
