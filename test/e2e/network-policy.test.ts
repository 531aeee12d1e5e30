// A store's NetworkPolicies enforced on the local cluster (decisions 35 and 38): a Pod in a namespace
// without a Binding to the store cannot open the master's RPC port nor a member's transfer port, a
// Pod in a bound namespace can, and deleting the Binding closes them again. The same probes connect
// before the enforcer runs, so every refusal below is the enforcer's. No engine: the probes are Pods
// that open a TCP connection and close it.

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import type { NetworkPolicy } from 'kubernetes-types/networking/v1.js';
import { storeImage } from '../../images/recipes.ts';
import type { KubeObject } from '../../src/kube/object.ts';
import { binding, pool, v1 } from '../builders/index.ts';
import { type E2ECluster, startE2ECluster } from '../support/local-cluster.ts';
import { waitFor } from '../support/wait.ts';

const storeNs = 'gpustack-system';
const backendName = 'np-store';
const bound = 'np-bound';
const unbound = 'np-unbound';
const rpcPort = 50051;
const adminPort = 9003;
/** A member's transfer ports (decision 35): handshake and TCP data, and the store client's. */
const transferRanges = [
  [15000, 17000],
  [12300, 14300],
] as const;

type Pod = KubeObject & {
  spec: { nodeName?: string };
  status?: { podIP?: string; phase?: string; containerStatuses?: { ready?: boolean }[] };
};

/** Opens a TCP connection from inside the Pod and closes it; prints `open`, or `closed` and why. */
const connectScript = [
  'import socket, sys',
  'try:',
  '    socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=3).close()',
  "    print('open')",
  'except OSError as e:',
  "    print('closed', e)",
].join('\n');

function probePod(namespace: string): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'probe', namespace },
    spec: {
      terminationGracePeriodSeconds: 0,
      containers: [
        { name: 'probe', image: storeImage, imagePullPolicy: 'IfNotPresent', command: ['sleep', 'infinity'] },
      ],
    },
  } as KubeObject;
}

/** The TCP ports a process's network namespace listens on (/proc/<pid>/net/tcp and tcp6). */
function listeningPorts(pid: number): number[] {
  const ports = new Set<number>();
  for (const file of ['tcp', 'tcp6']) {
    for (const line of readFileSync(`/proc/${pid}/net/${file}`, 'utf8').split('\n').slice(1)) {
      const [, local, , state] = line.trim().split(/\s+/);
      if (state === '0A' && local) ports.add(Number.parseInt(local.split(':').at(-1)!, 16));
    }
  }
  return [...ports];
}

describe('a store admits only the namespaces bound to it, enforced', () => {
  let e: E2ECluster;
  let leader: Pod;
  let members: { pod: Pod; port: number }[];

  const storePods = async (component: string) =>
    (
      await e.cluster.client.list<Pod>(
        { apiVersion: 'v1', kind: 'Pod', namespace: storeNs },
        {
          labelSelector: `app.kubernetes.io/instance=${backendName},app.kubernetes.io/component=${component}`,
        },
      )
    ).items.filter((p) => p.status?.containerStatuses?.[0]?.ready && !p.metadata.deletionTimestamp);
  const probeIp = async (namespace: string) =>
    (await e.cluster.client.get<Pod>({ apiVersion: 'v1', kind: 'Pod', namespace, name: 'probe' })).status!
      .podIP!;
  /** `open` or `closed …` for a connection from the probe of `namespace` to ip:port. */
  const connect = async (namespace: string, ip: string, port: number) =>
    (
      await e.kubectl([
        '-n',
        namespace,
        'exec',
        'probe',
        '--',
        'python3',
        '-c',
        connectScript,
        ip,
        String(port),
      ])
    ).trim();
  /** Every store port the probe of `namespace` can open, named; the rest reported closed. */
  const reach = async (namespace: string) => {
    const out: Record<string, string> = {};
    out[`rpc ${leader.status!.podIP}:${rpcPort}`] = await connect(namespace, leader.status!.podIP!, rpcPort);
    for (const m of members) {
      out[`transfer ${m.pod.spec.nodeName} ${m.pod.status!.podIP}:${m.port}`] = await connect(
        namespace,
        m.pod.status!.podIP!,
        m.port,
      );
    }
    return out;
  };
  const allOpen = (r: Record<string, string>) => Object.values(r).every((v) => v === 'open');
  const allClosed = (r: Record<string, string>) => Object.values(r).every((v) => v.startsWith('closed'));
  /** The namespaces the store's RPC and transfer policies name, as the operator applied them. */
  const policiesName = async (namespace: string) => {
    const texts = await Promise.all(
      [`${backendName}-leader`, `${backendName}-member`].map(async (name) =>
        JSON.stringify(
          (
            await e.cluster.client.get<KubeObject<NetworkPolicy>>({
              apiVersion: 'networking.k8s.io/v1',
              kind: 'NetworkPolicy',
              namespace: storeNs,
              name,
            })
          ).spec?.ingress,
        ),
      ),
    );
    return texts.map((t) => t.includes(`"${namespace}"`));
  };
  /** Whether every node's enforcer holds `ip` in one of its ipsets (the sources a policy admits). */
  const everyNodeAdmits = async (ip: string) => {
    const found = await Promise.all(
      e.cluster.nodes.map(async (n) =>
        // `add <set> <address> [timeout 0]`, one line per member of a set.
        (await e.cluster.node(n).exec(['ipset', 'save']))
          .split('\n')
          .some((l) => l.startsWith('add ') && l.split(' ')[2] === ip),
      ),
    );
    return found;
  };
  /** Whether the node of each store Pod jumps its traffic to a Pod firewall chain (the enforcer's rules are in). */
  const storePodsGuarded = async () =>
    Promise.all(
      [leader, ...members.map((m) => m.pod)].map(async (p) =>
        (await e.cluster.node(p.spec.nodeName!).exec(['iptables-save', '-t', 'filter']))
          .split('\n')
          .some((l) => l.includes(`-d ${p.status!.podIP}/32 `) && l.includes('-j KUBE-POD-FW-')),
      ),
    );

  before(async () => {
    e = await startE2ECluster();
    const client = e.cluster.client;
    for (const name of [bound, unbound]) {
      await client.apply(
        { apiVersion: 'v1', kind: 'Namespace', metadata: { name } },
        { fieldManager: 'test' },
      );
    }
    await client.apply(
      {
        apiVersion: v1,
        kind: 'KVCacheBackend',
        metadata: { name: backendName },
        spec: {
          type: 'Mooncake',
          connection: {
            managed: {
              leader: {},
              members: [
                { nodeSelector: { 'kubernetes.io/os': 'linux' }, medium: 'DRAM', capacityPerMember: '256Mi' },
              ],
            },
          },
        },
      } as KubeObject,
      { fieldManager: 'test' },
    );
    await client.apply(pool('np-pool', { backend: backendName, total: '512Mi' }), { fieldManager: 'test' });
    await client.apply(
      binding(bound, bound, { pool: 'np-pool', ceiling: '256Mi', domain: null, blockSize: 16 }),
      {
        fieldManager: 'test',
      },
    );
    for (const name of [bound, unbound]) await client.apply(probePod(name), { fieldManager: 'test' });
    await waitFor(
      async () => {
        const b = await e.backend(backendName);
        return b.status?.phase === 'Ready' && b.status.capacity?.total === '512Mi' ? b : undefined;
      },
      { what: `${backendName} Ready with both members (512Mi)`, timeoutMs: 240_000 },
    );
    leader = (await waitFor(async () => (await storePods('leader'))[0], { what: 'a ready leader' }))!;
    const memberPods = await waitFor(
      async () => ((await storePods('member-0')).length === 2 ? storePods('member-0') : undefined),
      {
        what: 'two ready members',
      },
    );
    members = [];
    for (const pod of memberPods) {
      const [pid] = await e.cluster.node(pod.spec.nodeName!).containerPids(storeNs, pod.metadata.name!);
      assert.ok(pid, `the container of ${pod.metadata.name}`);
      const port = listeningPorts(pid).find((p) => transferRanges.some(([lo, hi]) => p >= lo && p <= hi));
      assert.ok(port, `${pod.metadata.name} listens on a transfer port (${listeningPorts(pid).join(', ')})`);
      members.push({ pod, port });
    }
    for (const name of [bound, unbound]) {
      await waitFor(
        () => e.cluster.client.get<Pod>({ apiVersion: 'v1', kind: 'Pod', namespace: name, name: 'probe' }),
        { what: `the probe in ${name} running`, until: (p) => p.status?.phase === 'Running' },
      );
    }
    await waitFor(policiesName.bind(null, bound), {
      what: `the store's policies name ${bound}`,
      until: (named) => named.every(Boolean),
    });
  });
  after(() => e?.stop());

  it('before the enforcer runs, the Pod of the unbound namespace opens every store port (the policies are only written)', async () => {
    const r = await reach(unbound);
    assert.ok(allOpen(r), `expected every port open without enforcement: ${JSON.stringify(r)}`);
  });

  it('enforced: the unbound namespace opens neither the RPC port nor a transfer port; the bound one opens both, not the admin port', async () => {
    await e.cluster.enforceNetworkPolicies();
    const boundIp = await probeIp(bound);
    await waitFor(storePodsGuarded, {
      what: "the enforcer's rules guarding the leader and both members",
      until: (guarded) => guarded.every(Boolean),
    });
    await waitFor(() => everyNodeAdmits(boundIp), {
      what: `every node's enforcer admitting ${bound}'s probe (${boundIp})`,
      until: (found) => found.every(Boolean),
    });
    assert.deepEqual(
      await everyNodeAdmits(await probeIp(unbound)),
      e.cluster.nodes.map(() => false),
    );

    const refused = await reach(unbound);
    assert.ok(allClosed(refused), `the unbound namespace reached the store: ${JSON.stringify(refused)}`);
    console.log(`enforced, from ${unbound}: ${JSON.stringify(refused)}`);
    const admitted = await reach(bound);
    assert.ok(allOpen(admitted), `the bound namespace was refused: ${JSON.stringify(admitted)}`);
    const admin = await connect(bound, leader.status!.podIP!, adminPort);
    assert.match(admin, /^closed/, 'the admin port is the operator alone');
  });

  it('deleting the Binding closes the store to its namespace again', async () => {
    await e.kubectl(['-n', bound, 'delete', 'kvcachepoolbinding', bound, '--wait=true', '--timeout=120s']);
    await waitFor(policiesName.bind(null, bound), {
      what: `the operator's policies no longer naming ${bound}`,
      until: (named) => named.every((n) => !n),
    });
    const boundIp = await probeIp(bound);
    await waitFor(() => everyNodeAdmits(boundIp), {
      what: `every node's enforcer no longer admitting ${bound}'s probe (${boundIp})`,
      until: (found) => found.every((f) => !f),
    });
    const r = await reach(bound);
    assert.ok(
      allClosed(r),
      `the namespace whose Binding is gone still reached the store: ${JSON.stringify(r)}`,
    );
    console.log(`Binding deleted, from ${bound}: ${JSON.stringify(r)}`);
  });
});
