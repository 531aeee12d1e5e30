// Every shape and immutability rule the schema carries refuses a bad create or edit through the real
// apiserver, with a message that names the field and says how to fix it.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { KubeClient, KubeObject } from '../../src/kube/client.ts';
import { ApiError } from '../../src/kube/errors.ts';
import { ensureNamespace, testClient, uniqueName } from '../support/cluster.ts';

const v1 = 'worker.gpustack.ai/v1';
const ns = 'refusals';

type Obj = KubeObject & { spec: Record<string, unknown> };

function managed(name: string, members?: unknown[], leader: Record<string, unknown> = {}): Obj {
  return {
    apiVersion: v1,
    kind: 'KVCacheBackend',
    metadata: { name },
    spec: {
      connection: {
        managed: {
          leader,
          members: members ?? [
            { nodeSelector: { 'kubernetes.io/os': 'linux' }, medium: 'DRAM', capacityPerMember: '8Gi' },
          ],
        },
      },
    },
  };
}

function external(name: string, endpoints: unknown[]): Obj {
  return {
    apiVersion: v1,
    kind: 'KVCacheBackend',
    metadata: { name },
    spec: { connection: { external: { endpoints } } },
  };
}

const endpoints = (client = 'store:50051', admin = 'store:9003') => [
  { name: 'Client', address: client },
  { name: 'Admin', address: admin },
];

function group(extra: Record<string, unknown>): Record<string, unknown> {
  return { nodeSelector: { kvcache: 'true' }, medium: 'DRAM', capacityPerMember: '1Gi', ...extra };
}

function pool(name: string, spec: Record<string, unknown> = {}): Obj {
  return {
    apiVersion: v1,
    kind: 'KVCachePool',
    metadata: { name },
    spec: { backends: ['b'], quota: { total: '16Gi' }, ...spec },
  };
}

function binding(name: string, spec: Record<string, unknown> = {}): Obj {
  return {
    apiVersion: v1,
    kind: 'KVCachePoolBinding',
    metadata: { name, namespace: ns },
    spec: {
      poolRef: { name: 'p' },
      quota: { ceiling: '8Gi' },
      domain: { blockSize: 16, dtype: 'bfloat16' },
      ...spec,
    },
  };
}

function deployment(name: string, spec: Record<string, unknown> = {}): Obj {
  return {
    apiVersion: v1,
    kind: 'ModelDeployment',
    metadata: { name, namespace: ns },
    spec: {
      model: { name: 'Qwen/Qwen2.5-7B-Instruct' },
      engine: { name: 'vLLM', image: 'gpustack/runner:cuda13.0-vllm0.29.0' },
      kvCache: { poolRef: { name: 'team-a' } },
      roles: [{ name: 'server', instanceType: 'local-cpu' }],
      ...spec,
    },
  };
}

function instanceType(name: string, spec: Record<string, unknown> = {}): Obj {
  return {
    apiVersion: v1,
    kind: 'InstanceType',
    metadata: { name },
    spec: {
      os: 'linux',
      arch: 'amd64',
      unitResources: { cpu: '1', ram: '2Gi' },
      localStorage: '10Gi',
      ...spec,
    },
  };
}

interface Refusal {
  title: string;
  /** A refused create. */
  bad?: Obj;
  /** For a refused edit: a valid object to create first, and the edit. */
  base?: Obj;
  change?: (spec: Record<string, unknown>) => void;
  /** The field path the apiserver names, and text the message must carry (the fix). */
  field: string;
  says: string[];
}

const named = (f: (n: string) => Obj, prefix: string) => f(uniqueName(prefix));

function edit(base: Obj, change: (spec: Record<string, unknown>) => void): Obj {
  const copy = structuredClone(base);
  change(copy.spec);
  return copy;
}

const cases: Refusal[] = [];
const create = (title: string, bad: Obj, field: string, ...says: string[]) =>
  cases.push({ title, bad, field, says });
const update = (
  title: string,
  base: Obj,
  change: (spec: Record<string, unknown>) => void,
  field: string,
  ...says: string[]
) => cases.push({ title, base, change, field, says });

// KVCacheBackend: connection shape.
{
  const both = named((n) => managed(n), 'both');
  (both.spec.connection as Record<string, unknown>).external = { endpoints: endpoints() };
  create('backend with both branches', both, 'spec.connection', 'exactly one of managed', 'remove the other');
  create(
    'backend with neither branch',
    { ...named((n) => managed(n), 'neither'), spec: { connection: {} } },
    'spec.connection',
    'exactly one of managed',
  );
  update(
    'backend switching managed → external',
    named((n) => managed(n), 'switch'),
    (s) => {
      s.connection = { external: { endpoints: endpoints() } };
    },
    'spec.connection',
    'cannot switch between managed and external',
    'create a new backend',
  );
  create(
    'backend of an unknown type',
    { ...named((n) => managed(n), 'type'), spec: { ...managed('x').spec, type: 'Redis' } },
    'spec.type',
    'supported values: "Mooncake"',
  );
}
// KVCacheBackend: leader.
create(
  'leader replicas above 1 without an election',
  named((n) => managed(n, undefined, { replicas: 3, electionBackend: 'None' }), 'noelect'),
  'spec.connection.managed.leader.replicas',
  'needs an election',
  'set leader.electionBackend to Kubernetes',
);
create(
  'leader replicas above 5',
  named((n) => managed(n, undefined, { replicas: 6 }), 'six'),
  'spec.connection.managed.leader.replicas',
  'less than or equal to 5',
);
create(
  'blank image',
  { ...named((n) => managed(n), 'img'), spec: { ...managed('x').spec, image: '   ' } },
  'spec.image',
  'spec.image must be an image reference',
  'remove the field',
);
// KVCacheBackend: external endpoints.
create(
  'external endpoint with a scheme',
  named((n) => external(n, endpoints('http://store:50051')), 'scheme'),
  'spec.connection.external.endpoints[0].address',
  'must be host:port',
  'no scheme',
);
create(
  'external endpoint with a path',
  named((n) => external(n, endpoints('store:50051', 'a/b:9003')), 'path'),
  'spec.connection.external.endpoints[1].address',
  'must be host:port',
);
create(
  'external endpoint port out of range',
  named((n) => external(n, endpoints('store:70000')), 'port'),
  'spec.connection.external.endpoints[0].address',
  'port in 1..65535',
);
create(
  'external without an Admin endpoint',
  named((n) => external(n, [{ name: 'Client', address: 'store:50051' }]), 'noadmin'),
  'spec.connection.external.endpoints',
  'needs both a Client',
  'Admin',
);
// KVCacheBackend: members.
update(
  'member medium changed in place',
  named((n) => managed(n), 'medium'),
  (s) => {
    (s.connection as { managed: { members: { medium: string }[] } }).managed.members[0]!.medium = 'VRAM';
  },
  'spec.connection.managed.members',
  'medium is immutable per position',
  'append a new group',
);
create(
  'zero capacityPerMember',
  named((n) => managed(n, [group({ capacityPerMember: '0' })]), 'zero'),
  'spec.connection.managed.members[0].capacityPerMember',
  'greater than zero',
  'for example 8Gi',
);
create(
  'fractional capacityPerMember',
  named((n) => managed(n, [group({ capacityPerMember: '1.5' })]), 'frac'),
  'spec.connection.managed.members[0].capacityPerMember',
  'whole number of bytes',
);
create(
  'negative localBufferSize',
  named((n) => managed(n, [group({ localBufferSize: '-1' })]), 'buf'),
  'spec.connection.managed.members[0].localBufferSize',
  'zero or more',
);
create(
  'two groups with a disk tier',
  named(
    (n) => managed(n, [group({ localDisks: [{ path: '/a' }] }), group({ localDisks: [{ path: '/b' }] })]),
    'twotier',
  ),
  'spec.connection.managed.members',
  'at most one member group',
  'new backend',
);
create(
  'tier with capacityPerMember below one bucket',
  named(
    (n) => managed(n, [group({ capacityPerMember: '8Mi', localDisks: [{ path: '/var/lib/kvcache' }] })]),
    'bucket',
  ),
  'spec.connection.managed.members[0].capacityPerMember',
  'at least one 16Mi bucket',
);
for (const [title, path, ...says] of [
  ['relative tier path', 'var/lib/kvcache', 'absolute directory'],
  ['tier path /', '/', 'absolute directory other than /'],
  ['tier path with ..', '/var/../etc', 'must not contain a .. component'],
  ['tier path under /dev/infiniband', '/dev/infiniband/cache', '/dev/infiniband'],
  ['tier path containing /dev/infiniband', '/dev', '/dev/infiniband'],
  ['tier path with trailing whitespace', '/var/lib/kvcache ', 'whitespace'],
  ['tier path with //', '/data//kvcache', 'write it as /data/kvcache'],
  ['tier path with a . component', '/data/./kvcache', 'write it as /data/kvcache'],
  ['tier path ending in /', '/data/kvcache/', 'write it as /data/kvcache'],
  ['tier path ending in /.', '/data/kvcache/.', 'write it as /data/kvcache'],
  ['tier path /etc', '/etc', 'inside /etc', 'for example /var/lib/kvcache'],
  ['tier path /var/lib', '/var/lib', 'system directory'],
  ['tier path /home', '/home', 'system directory'],
  ['tier path /tmp', '/tmp', 'system directory'],
  ['tier path /var/lib/', '/var/lib/', 'write it as /var/lib', 'system directory (/var/lib)'],
  ['tier path /lib64', '/lib64', 'inside /lib64'],
  ['tier path inside /usr', '/usr/local/kvcache', 'inside /usr'],
  ['tier path inside /proc', '/proc/kvcache', 'inside /proc'],
  ['tier path inside the kubelet', '/var/lib/kubelet/kvcache', 'inside /var/lib/kubelet'],
  ['tier path inside /lib*', '/libx32/kvcache', 'inside /libx32'],
] as const) {
  create(
    title,
    named((n) => managed(n, [group({ localDisks: [{ path }] })]), 'tierpath'),
    'spec.connection.managed.members[0].localDisks[0].path',
    ...says,
  );
}
create(
  'tier capacity below one bucket',
  named((n) => managed(n, [group({ localDisks: [{ path: '/d', capacity: '1Mi' }] })]), 'tiercap'),
  'spec.connection.managed.members[0].localDisks[0].capacity',
  'at least one 16Mi bucket',
);
create(
  'tier keyLimit below one bucket',
  named((n) => managed(n, [group({ localDisks: [{ path: '/d', keyLimit: 10 }] })]), 'tierkeys'),
  'spec.connection.managed.members[0].localDisks[0].keyLimit',
  'at least one bucket of keys (64)',
);
create(
  'eviction disabled with a policy',
  named(
    (n) => managed(n, [group({ localDisks: [{ path: '/d', eviction: { enabled: false, policy: 'LRU' } }] })]),
    'evpol',
  ),
  'spec.connection.managed.members[0].localDisks[0].eviction',
  'remove policy, or set enabled to true',
);
create(
  'eviction disabled with a watermark',
  named(
    (n) =>
      managed(n, [
        group({
          localDisks: [
            { path: '/d', capacity: '1Gi', eviction: { enabled: false, watermark: { high: 90, low: 80 } } },
          ],
        }),
      ]),
    'evwm',
  ),
  'spec.connection.managed.members[0].localDisks[0].eviction',
  'remove watermark',
);
create(
  'watermark without capacity',
  named(
    (n) =>
      managed(n, [group({ localDisks: [{ path: '/d', eviction: { watermark: { high: 90, low: 80 } } }] })]),
    'wmcap',
  ),
  'spec.connection.managed.members[0].localDisks[0]',
  'set capacity, or remove watermark',
);
create(
  'watermark low not below high',
  named(
    (n) =>
      managed(n, [
        group({
          localDisks: [{ path: '/d', capacity: '1Gi', eviction: { watermark: { high: 80, low: 80 } } }],
        }),
      ]),
    'wmlow',
  ),
  'spec.connection.managed.members[0].localDisks[0].eviction.watermark',
  'low must be below watermark.high',
);
create(
  'host path mounted at /dev/infiniband',
  named((n) => managed(n, [group({ hostPaths: [{ path: '/x', mountPath: '/dev/infiniband' }] })]), 'ib'),
  'spec.connection.managed.members[0].hostPaths[0].mountPath',
  'transport.protocol RDMA or EFA',
);
create(
  'host path over the tier',
  named(
    (n) =>
      managed(n, [group({ localDisks: [{ path: '/d' }], hostPaths: [{ path: '/x', mountPath: '/d' }] })]),
    'hptier',
  ),
  'spec.connection.managed.members[0].hostPaths',
  'must not be the group’s own localDisks[].path',
);
create(
  'duplicate host path mount',
  named(
    (n) =>
      managed(n, [
        group({
          hostPaths: [
            { path: '/x', mountPath: '/m' },
            { path: '/y', mountPath: '/m' },
          ],
        }),
      ]),
    'hpdup',
  ),
  'spec.connection.managed.members[0].hostPaths[1]',
  'Duplicate value',
);

// KVCachePool.
create(
  'pool naming two backends',
  named((n) => pool(n, { backends: ['a', 'b'] }), 'two'),
  'spec.backends',
  'exactly one KVCacheBackend',
  'one pool per backend',
);
create(
  'pool naming no backend',
  named((n) => pool(n, { backends: [] }), 'none'),
  'spec.backends',
  'exactly one KVCacheBackend',
);
update(
  'pool re-pointed',
  named((n) => pool(n), 'repoint'),
  (s) => {
    s.backends = ['other'];
  },
  'spec.backends',
  'spec.backends is immutable',
  'create a new pool',
);
create(
  'pool with zero total',
  named((n) => pool(n, { quota: { total: 0 } }), 'ptotal'),
  'spec.quota.total',
  'greater than zero',
  'for example 16Gi',
);

// KVCachePoolBinding.
create(
  'binding poolRef that is no object name',
  named((n) => binding(n, { poolRef: { name: 'Shared_DRAM' } }), 'prefname'),
  'spec.poolRef.name',
  'spec.poolRef.name must be the name of a KVCachePool',
  'DNS-1123 subdomain',
  'for example shared-dram',
);
update(
  'binding poolRef changed',
  named((n) => binding(n), 'pref'),
  (s) => {
    s.poolRef = { name: 'q' };
  },
  'spec.poolRef',
  'spec.poolRef is immutable',
  'create a new Binding',
);
update(
  'binding domain dtype changed',
  named((n) => binding(n), 'dtype'),
  (s) => {
    (s.domain as Record<string, unknown>).dtype = 'fp8_e4m3';
  },
  'spec.domain',
  'spec.domain is immutable',
  'delete this Binding and create a new one',
);
update(
  'binding domain name changed',
  named((n) => binding(n), 'dname'),
  (s) => {
    (s.domain as Record<string, unknown>).name = 'other';
  },
  'spec.domain',
  'spec.domain is immutable',
);
create(
  'binding domain name not a DNS label',
  named((n) => binding(n, { domain: { name: 'Qwen_7B', blockSize: 16, dtype: 'bfloat16' } }), 'dns'),
  'spec.domain.name',
  'DNS-1123 label',
  'for example qwen-fp8-v1',
);
create(
  'binding domain name starting with _',
  named((n) => binding(n, { domain: { name: '_tenant', blockSize: 16, dtype: 'bfloat16' } }), 'under'),
  'spec.domain.name',
  'DNS-1123 label',
);
create(
  'binding blockSize zero',
  named((n) => binding(n, { domain: { blockSize: 0, dtype: 'bfloat16' } }), 'block'),
  'spec.domain.blockSize',
  'above zero',
);
create(
  'binding dtype not lowercase',
  named((n) => binding(n, { domain: { blockSize: 16, dtype: 'BF16' } }), 'upper'),
  'spec.domain.dtype',
  'lowercase',
  'bfloat16',
);
create(
  'binding zero ceiling',
  named((n) => binding(n, { quota: { ceiling: '0' } }), 'ceil'),
  'spec.quota.ceiling',
  'greater than zero',
);

// ModelDeployment.
update(
  'kvCache re-pointed',
  named((n) => deployment(n), 'kvre'),
  (s) => {
    s.kvCache = { poolRef: { name: 'other' } };
  },
  'spec.kvCache',
  'spec.kvCache is immutable',
  'create a new ModelDeployment',
);
update(
  'kvCache removed',
  named((n) => deployment(n), 'kvrm'),
  (s) => {
    delete s.kvCache;
  },
  'spec.kvCache',
  'spec.kvCache is immutable',
);
update(
  'kvCache added',
  named((n) => deployment(n, { kvCache: undefined }), 'kvadd'),
  (s) => {
    s.kvCache = { poolRef: { name: 'team-a' } };
  },
  'spec.kvCache',
  'spec.kvCache is immutable',
);
create(
  'kvCache with an empty poolRef',
  named((n) => deployment(n, { kvCache: { poolRef: { name: '' } } }), 'kvempty'),
  'spec.kvCache.poolRef.name',
  'must name a KVCachePoolBinding in this namespace',
);
update(
  'engine changed',
  named((n) => deployment(n), 'engine'),
  (s) => {
    s.engine = { name: 'SGLang', image: 'x' };
  },
  'spec.engine.name',
  'spec.engine.name is immutable',
  'create a new ModelDeployment',
);
update(
  'model changed',
  named((n) => deployment(n), 'model'),
  (s) => {
    s.model = { name: 'other' };
  },
  'spec.model',
  'spec.model is immutable',
);
create(
  'Server mixed with Prefill',
  named(
    (n) =>
      deployment(n, {
        roles: [
          { name: 'a', instanceType: 't' },
          { name: 'b', kind: 'Prefill', instanceType: 't' },
        ],
      }),
    'mix',
  ),
  'spec.roles',
  'cannot be mixed',
  'separate deployments',
);
update(
  'role kind changed',
  named(
    (n) =>
      deployment(n, {
        roles: [
          { name: 'p', kind: 'Prefill', instanceType: 't' },
          { name: 'd', kind: 'Decode', instanceType: 't' },
        ],
      }),
    'rolekind',
  ),
  (s) => {
    (s.roles as { kind: string }[])[0]!.kind = 'Decode';
    (s.roles as { kind: string }[])[1]!.kind = 'Prefill';
  },
  'spec.roles',
  'kind is immutable',
  'new name',
);

create(
  'a privileged engine',
  named((n) => deployment(n, { roles: [{ name: 'server', instanceType: 't', privileged: true }] }), 'priv'),
  'spec.roles[0].privileged',
  "may not ask for what Pod Security 'baseline' forbids",
  'kvcache.gpustack.ai/inject=true',
);
create(
  'a hostPath volume',
  named(
    (n) =>
      deployment(n, {
        roles: [
          {
            name: 'server',
            instanceType: 't',
            additionalVolumes: [
              { name: 'scratch', emptyDir: {} },
              { name: 'node', hostPath: { path: '/var/lib' }, mountPath: '/host' },
            ],
          },
        ],
      }),
    'hostpath',
  ),
  'spec.roles[0].additionalVolumes',
  'hostPath',
  "may not ask for what Pod Security 'baseline' forbids",
  'persistentVolumeClaim',
);

// InstanceType.
create(
  'acceleratable without a group',
  named((n) => instanceType(n, { acceleratable: true }), 'itacc'),
  'spec',
  'spec.acceleratorGroup is required',
);
create(
  'CPU-only with unit CPU 2',
  named((n) => instanceType(n, { unitResources: { cpu: '2', ram: '2Gi' } }), 'itcpu'),
  'spec',
  'must be exactly 1',
);
update(
  'instance type os changed',
  named((n) => instanceType(n), 'itos'),
  (s) => {
    s.os = 'windows';
  },
  'spec',
  'immutable',
  'create a new InstanceType',
);

describe('schema refusals through the real apiserver', () => {
  let client: KubeClient;
  before(async () => {
    client = await testClient();
    await ensureNamespace(client, ns);
  });
  after(() => client.close());

  for (const c of cases) {
    it(`refuses ${c.title}`, async () => {
      const attempt = c.base
        ? client.create(c.base).then((created) => client.replace(edit(created, c.change!)))
        : client.create(c.bad!);
      const err = await attempt.then(
        () => assert.fail(`${c.title}: the apiserver accepted it`),
        (e: unknown) => e,
      );
      assert.ok(err instanceof ApiError, String(err));
      assert.equal(err.status, 422, err.message);
      assert.ok(
        err.causes.some((cause) => cause.field === c.field),
        `expected a cause on ${c.field}, got ${JSON.stringify(err.causes)}`,
      );
      for (const text of c.says)
        assert.ok(err.message.includes(text), `message lacks "${text}": ${err.message}`);
    });
  }

  it('accepts the same objects when they are valid (the refusals are not blanket)', async () => {
    await client.create(
      named(
        (n) =>
          managed(n, [
            group({
              localDisks: [
                { path: '/var/lib/kvcache', capacity: '1Gi', eviction: { watermark: { high: 90, low: 80 } } },
              ],
            }),
          ]),
        'ok',
      ),
    );
    for (const path of ['/data/kvcache', '/opt/kvcache', '/tmp/kvcache', '/var/lib/kubelet2', '/library/kv'])
      await client.create(named((n) => managed(n, [group({ localDisks: [{ path }] })]), 'okpath'));
    await client.create(named((n) => external(n, endpoints('[::1]:50051', '10.0.0.5:9003')), 'okext'));
    await client.create(named((n) => binding(n, { poolRef: { name: 'shared.dram-2' } }), 'okpref'));
    const volumes = [{ name: 'weights', persistentVolumeClaim: { claimName: 'w' }, mountPath: '/models' }];
    await client.create(
      named(
        (n) =>
          deployment(n, {
            roles: [{ name: 'server', instanceType: 't', privileged: false, additionalVolumes: volumes }],
          }),
        'okrole',
      ),
    );
    const base = named((n) => managed(n), 'okedit');
    await client.create(base);
    const stored = await client.get<Obj>({
      apiVersion: v1,
      kind: 'KVCacheBackend',
      name: base.metadata.name!,
    });
    const members = (stored.spec.connection as { managed: { members: unknown[] } }).managed.members;
    members.push(group({ medium: 'VRAM' }));
    await client.replace(stored);
  });
});
