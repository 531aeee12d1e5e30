// KVCacheBackend: every shape and immutability rule of its connection, leader, external endpoints and
// member groups refuses a bad create or edit through the real apiserver, naming the field and the fix.
import {
  describeRefusals,
  endpoints,
  external,
  group,
  managed,
  named,
  refusalCases,
} from '../support/schema-refusals.ts';

const { cases, create, update } = refusalCases();

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
  'set leader.electionBackend to Etcd (failovers keep the cache) or Kubernetes',
);
create(
  'an etcd for a store that does not replicate its metadata',
  named((n) => managed(n, undefined, { replicas: 2, etcd: { replicas: 3 } }), 'etcdlease'),
  'spec.connection.managed.leader.etcd',
  'is used by electionBackend Etcd only',
  'set leader.electionBackend to Etcd, or remove leader.etcd',
);
create(
  'an etcd of two members',
  named(
    (n) => managed(n, undefined, { replicas: 2, electionBackend: 'Etcd', etcd: { replicas: 2 } }),
    'etcdtwo',
  ),
  'spec.connection.managed.leader.etcd.replicas',
  'supported values: "1", "3", "5"',
  'supported values',
);
create(
  'an external etcd with members of its own',
  named(
    (n) =>
      managed(n, undefined, {
        replicas: 2,
        electionBackend: 'Etcd',
        etcd: { replicas: 3, external: { endpoints: ['https://etcd.example:2379'], clientSecretName: 'c' } },
      }),
    'etcdboth',
  ),
  'spec.connection.managed.leader.etcd',
  'external names an etcd the operator does not run',
  'remove replicas and storage, or remove external',
);
create(
  'an external etcd over plain HTTP',
  named(
    (n) =>
      managed(n, undefined, {
        replicas: 2,
        electionBackend: 'Etcd',
        etcd: { external: { endpoints: ['http://etcd.example:2379'], clientSecretName: 'c' } },
      }),
    'etcdplain',
  ),
  'spec.connection.managed.leader.etcd.external.endpoints[0]',
  'must be https://host:port (TLS only)',
  'for example https://etcd-0.etcd.example:2379',
);
create(
  'members following the Lease of an etcd election',
  named(
    (n) => managed(n, undefined, { replicas: 2, electionBackend: 'Etcd', memberAddressing: 'Lease' }),
    'etcdlease2',
  ),
  'spec.connection.managed.leader.memberAddressing',
  'which electionBackend Etcd and None do not have',
  'set it to Service',
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

describeRefusals('KVCacheBackend', cases);
