// KVCacheBackend: the store itself (cluster-scoped). Field rules restate the KV-cache spec §1.1/§3.1;
// the rules CEL can judge live here, the rest in the validating webhook.
import {
  AtomicList,
  Conditions,
  cel,
  dns1123Subdomain,
  EnvVar,
  immutable,
  LocalObjectReference,
  MapList,
  nonNegativeBytes,
  phaseFields,
  positiveBytes,
  Quantity,
  type Static,
  StringEnum,
  StringMap,
  Type,
  UsedBy,
} from './schema.ts';

export const transportProtocols = ['Auto', 'TCP', 'RDMA', 'EFA', 'CANN', 'ROCM', 'MUSA', 'MACA'] as const;
export type TransportProtocol = (typeof transportProtocols)[number];

const Transport = Type.Object(
  { protocol: Type.Optional(StringEnum(transportProtocols, { default: 'Auto' })) },
  { default: {} },
);

const GroupTransport = Type.Object({
  protocol: Type.Optional(StringEnum(transportProtocols)),
});

const imageField = (field: string) =>
  Type.String({
    maxLength: 512,
    ...cel({
      rule: "!self.matches('^\\\\s*$') && !self.matches('\\\\s')",
      message: `${field} must be an image reference without spaces, for example registry.example.com/store:1.0; remove the field to use the default image`,
    }),
  });

// The store's Lease timing (docs/store-program.md, "Lease timing"); kvpool-store's flags are rendered from it.
const leaseTimingField = 'spec.connection.managed.leader.leaseTiming';
const wholeSeconds = '^[1-9][0-9]{0,3}s$';
const msOrSeconds = '^[1-9][0-9]{0,6}(ms|s)$';
const LeaseDuration = (field: string, pattern: string, fallback: string) =>
  Type.String({
    maxLength: 9,
    default: fallback,
    ...cel({
      rule: `self.matches('${pattern}')`,
      message:
        pattern === wholeSeconds
          ? `${leaseTimingField}.${field} must be whole seconds, for example ${fallback}: a Lease records its duration in seconds`
          : `${leaseTimingField}.${field} must be a whole number of ms or s, for example ${fallback}`,
    }),
  });
/** A CEL condition that holds when every named field is present and well formed. */
const wellFormed = (...fields: [string, string][]) =>
  fields.map(([f, pattern]) => `has(self.${f}) && self.${f}.matches('${pattern}')`).join(' && ');
const LeaseTiming = Type.Object(
  {
    leaseDuration: Type.Optional(LeaseDuration('leaseDuration', wholeSeconds, '8s')),
    renewDeadline: Type.Optional(LeaseDuration('renewDeadline', msOrSeconds, '7s')),
    retryPeriod: Type.Optional(LeaseDuration('retryPeriod', msOrSeconds, '250ms')),
  },
  cel(
    {
      rule: `!(${wellFormed(['leaseDuration', wholeSeconds], ['renewDeadline', msOrSeconds])}) || duration(self.leaseDuration) - duration(self.renewDeadline) >= duration('500ms')`,
      message: `${leaseTimingField}.renewDeadline must be at least 500ms below leaseDuration: a leader that cannot renew stops its master at the renew deadline, before a standby may take the Lease; for example leaseDuration 8s, renewDeadline 7s`,
      fieldPath: '.renewDeadline',
    },
    {
      rule: `!(${wellFormed(['renewDeadline', msOrSeconds], ['retryPeriod', msOrSeconds])}) || duration(self.renewDeadline) >= duration(self.retryPeriod) + duration(self.retryPeriod)`,
      message: `${leaseTimingField}.retryPeriod must be at most half of renewDeadline, so the leader tries at least twice before it stops; for example renewDeadline 7s, retryPeriod 250ms`,
      fieldPath: '.retryPeriod',
    },
    {
      rule: `!(${wellFormed(['retryPeriod', msOrSeconds])}) || duration(self.retryPeriod) >= duration('100ms')`,
      message: `${leaseTimingField}.retryPeriod must be at least 100ms: every retry is a request to the API server`,
      fieldPath: '.retryPeriod',
    },
  ),
);

const Leader = Type.Object(
  {
    leaseTiming: Type.Optional(LeaseTiming),
    replicas: Type.Optional(Type.Integer({ format: 'int32', minimum: 1, maximum: 5, default: 1 })),
    electionBackend: Type.Optional(StringEnum(['Kubernetes', 'None'] as const, { default: 'Kubernetes' })),
    memberAddressing: Type.Optional(StringEnum(['Service', 'Lease'] as const, { default: 'Service' })),
    allocationStrategy: Type.Optional(
      StringEnum(['FreeRatioFirst', 'Random'] as const, { default: 'FreeRatioFirst' }),
    ),
    multiTenancy: Type.Optional(Type.Boolean({ default: true })),
    extraArgs: Type.Optional(AtomicList(Type.String({ minLength: 1, maxLength: 4096 }), 64)),
    extraEnv: Type.Optional(MapList(EnvVar, ['name'], 64)),
  },
  cel(
    {
      rule: "!has(self.replicas) || self.replicas <= 1 || !has(self.electionBackend) || self.electionBackend == 'Kubernetes'",
      message:
        'spec.connection.managed.leader.replicas above 1 needs an election: set leader.electionBackend to Kubernetes, or leader.replicas to 1',
      fieldPath: '.replicas',
    },
    {
      rule: "!has(self.leaseTiming) || !has(self.electionBackend) || self.electionBackend == 'Kubernetes'",
      message: `${leaseTimingField} has no effect without an election: remove it, or set leader.electionBackend to Kubernetes`,
      fieldPath: '.leaseTiming',
    },
  ),
);

const Eviction = Type.Object(
  {
    enabled: Type.Optional(Type.Boolean({ default: true })),
    policy: Type.Optional(StringEnum(['FIFO', 'LRU'] as const)),
    watermark: Type.Optional(
      Type.Object(
        {
          high: Type.Integer({ format: 'int32', minimum: 1, maximum: 100 }),
          low: Type.Integer({ format: 'int32', minimum: 1, maximum: 100 }),
        },
        cel({
          rule: 'self.low < self.high',
          message:
            'localDisks[].eviction.watermark.low must be below watermark.high, for example high: 90, low: 80',
        }),
      ),
    ),
  },
  cel(
    {
      rule: '!(has(self.enabled) && !self.enabled && has(self.policy))',
      message:
        'localDisks[].eviction.policy has no effect while eviction.enabled is false: remove policy, or set enabled to true',
    },
    {
      rule: '!(has(self.enabled) && !self.enabled && has(self.watermark))',
      message:
        'localDisks[].eviction.watermark has no effect while eviction.enabled is false: remove watermark, or set enabled to true',
    },
  ),
);

const LocalDisk = Type.Object(
  {
    path: Type.String({
      minLength: 1,
      maxLength: 4096,
      ...cel(
        {
          rule: "self.startsWith('/') && self != '/'",
          message:
            'localDisks[].path must be an absolute directory other than /, for example /var/lib/kvcache',
        },
        {
          rule: "!self.matches('(^|/)\\\\.\\\\.(/|$)')",
          message: 'localDisks[].path must not contain a .. component; write the directory out in full',
        },
        {
          rule: "!self.matches('^\\\\s') && !self.matches('\\\\s$')",
          message: 'localDisks[].path must not start or end with whitespace; remove it',
        },
        {
          rule: "!(self == '/dev/infiniband' || self.startsWith('/dev/infiniband/') || '/dev/infiniband'.startsWith(self + '/'))",
          message:
            'localDisks[].path must not be, contain or sit inside /dev/infiniband; choose another directory',
        },
      ),
    }),
    capacity: Type.Optional(
      Quantity(
        cel({
          rule: "quantity(string(self)).isInteger() && quantity(string(self)).compareTo(quantity('16Mi')) >= 0",
          message:
            'localDisks[].capacity must be at least one 16Mi bucket (and a whole number of bytes); raise it, or remove it to use the store ceiling',
        }),
      ),
    ),
    keyLimit: Type.Optional(
      Type.Integer({
        format: 'int64',
        ...cel({
          rule: 'self >= 64',
          message:
            'localDisks[].keyLimit must be at least one bucket of keys (64); raise it, or remove it to use the store ceiling',
        }),
      }),
    ),
    eviction: Type.Optional(Eviction),
    cleanAfterDelete: Type.Optional(Type.Boolean({ default: false })),
  },
  cel({
    rule: '!has(self.eviction) || !has(self.eviction.watermark) || has(self.capacity)',
    message:
      'localDisks[].eviction.watermark is a percentage of localDisks[].capacity: set capacity, or remove watermark',
  }),
);

const HostPath = Type.Object({
  path: Type.String({
    minLength: 1,
    maxLength: 1024,
    ...cel({ rule: "self.startsWith('/')", message: 'hostPaths[].path must be an absolute path' }),
  }),
  mountPath: Type.String({
    minLength: 1,
    maxLength: 1024,
    ...cel(
      { rule: "self.startsWith('/')", message: 'hostPaths[].mountPath must be an absolute path' },
      {
        rule: "self != '/dev/infiniband'",
        message:
          'hostPaths[].mountPath must not be /dev/infiniband: fabric devices come from transport.protocol RDMA or EFA, not a host path',
      },
    ),
  }),
  type: Type.Optional(
    StringEnum([
      '',
      'DirectoryOrCreate',
      'Directory',
      'FileOrCreate',
      'File',
      'Socket',
      'CharDevice',
      'BlockDevice',
    ] as const),
  ),
  readOnly: Type.Optional(Type.Boolean()),
});

// The part of core/v1 SecurityContext a member may set; merged onto the protocol-derived context.
const SecurityContext = Type.Object({
  capabilities: Type.Optional(
    Type.Object({
      add: Type.Optional(AtomicList(Type.String({ maxLength: 64 }), 64)),
      drop: Type.Optional(AtomicList(Type.String({ maxLength: 64 }), 64)),
    }),
  ),
  privileged: Type.Optional(Type.Boolean()),
  runAsUser: Type.Optional(Type.Integer({ format: 'int64' })),
  runAsGroup: Type.Optional(Type.Integer({ format: 'int64' })),
  runAsNonRoot: Type.Optional(Type.Boolean()),
  readOnlyRootFilesystem: Type.Optional(Type.Boolean()),
  allowPrivilegeEscalation: Type.Optional(Type.Boolean()),
  procMount: Type.Optional(Type.String({ maxLength: 32 })),
  seLinuxOptions: Type.Optional(
    Type.Object({
      user: Type.Optional(Type.String({ maxLength: 256 })),
      role: Type.Optional(Type.String({ maxLength: 256 })),
      type: Type.Optional(Type.String({ maxLength: 256 })),
      level: Type.Optional(Type.String({ maxLength: 256 })),
    }),
  ),
  seccompProfile: Type.Optional(
    Type.Object({
      type: StringEnum(['Unconfined', 'RuntimeDefault', 'Localhost'] as const),
      localhostProfile: Type.Optional(Type.String({ maxLength: 4096 })),
    }),
  ),
  appArmorProfile: Type.Optional(
    Type.Object({
      type: StringEnum(['Unconfined', 'RuntimeDefault', 'Localhost'] as const),
      localhostProfile: Type.Optional(Type.String({ maxLength: 4096 })),
    }),
  ),
});

const MemberGroup = Type.Object(
  {
    nodeSelector: StringMap(),
    medium: StringEnum(['DRAM', 'VRAM'] as const),
    capacityPerMember: Quantity(cel(positiveBytes('members[].capacityPerMember', '8Gi'))),
    localBufferSize: Type.Optional(Quantity(cel(nonNegativeBytes('members[].localBufferSize', '128Mi')))),
    image: Type.Optional(imageField('members[].image')),
    transport: Type.Optional(GroupTransport),
    fabricInterfaceCount: Type.Optional(Type.Integer({ format: 'int32', minimum: 1, maximum: 64 })),
    extraArgs: Type.Optional(AtomicList(Type.String({ minLength: 1, maxLength: 4096 }), 64)),
    extraEnv: Type.Optional(MapList(EnvVar, ['name'], 64)),
    localDisks: Type.Optional(MapList(LocalDisk, ['path'], 1)),
    hostPaths: Type.Optional(MapList(HostPath, ['mountPath'], 32)),
    securityContext: Type.Optional(SecurityContext),
    runtimeClassName: Type.Optional(Type.String({ maxLength: 253, pattern: dns1123Subdomain })),
  },
  cel(
    {
      rule: "!has(self.localDisks) || size(self.localDisks) == 0 || quantity(string(self.capacityPerMember)).compareTo(quantity('16Mi')) >= 0",
      message:
        'members[].capacityPerMember must hold at least one 16Mi bucket when the group declares localDisks; raise it to 16Mi or more',
      fieldPath: '.capacityPerMember',
    },
    {
      rule: '!has(self.hostPaths) || !has(self.localDisks) || self.hostPaths.all(h, self.localDisks.all(d, h.mountPath != d.path))',
      message:
        'members[].hostPaths[].mountPath must not be the group’s own localDisks[].path; the tier is mounted there already',
      fieldPath: '.hostPaths',
    },
  ),
);

const Managed = Type.Object({
  leader: Leader,
  members: AtomicList(MemberGroup, 32, {
    minItems: 1,
    ...cel(
      {
        rule: 'self.filter(m, has(m.localDisks) && size(m.localDisks) > 0).size() <= 1',
        message:
          'spec.connection.managed.members: at most one member group per backend may declare localDisks; declare the tier on a new backend',
      },
      {
        // A group's position is its identity: medium may not change at a position both lists have.
        rule: '[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31].all(i, i >= size(self) || i >= size(oldSelf) || self[i].medium == oldSelf[i].medium)',
        message:
          'spec.connection.managed.members[].medium is immutable per position: to change a medium, append a new group and remove the old one, or create a new backend',
      },
    ),
  }),
  scaleIn: Type.Optional(
    Type.Object({
      gracePeriodSeconds: Type.Optional(Type.Integer({ format: 'int32', minimum: 0, maximum: 3600 })),
    }),
  ),
});

const Endpoint = Type.Object({
  name: StringEnum(['Client', 'Admin'] as const),
  address: Type.String({
    minLength: 1,
    maxLength: 259,
    ...cel({
      rule: "self.matches('^([A-Za-z0-9.-]+|\\\\[[0-9A-Fa-f:.]+\\\\]):[0-9]{1,5}$') && int(self.substring(self.lastIndexOf(':') + 1)) >= 1 && int(self.substring(self.lastIndexOf(':') + 1)) <= 65535",
      message:
        'connection.external.endpoints[].address must be host:port with a port in 1..65535 and nothing else (no scheme, path, user or spaces), for example store.example.com:50051',
    }),
  }),
});

const External = Type.Object({
  endpoints: MapList(Endpoint, ['name'], 2, {
    ...cel({
      rule: "self.exists(e, e.name == 'Client') && self.exists(e, e.name == 'Admin')",
      message:
        'spec.connection.external.endpoints needs both a Client (the RPC address engines dial, :50051) and an Admin (the admin/metrics address, :9003) entry',
    }),
  }),
});

export const KVCacheBackendSpec = Type.Object({
  type: Type.Optional(
    StringEnum(['Mooncake'] as const, {
      default: 'Mooncake',
      ...cel(immutable('spec.type', 'create a new backend of the other type instead')),
    }),
  ),
  image: Type.Optional(imageField('spec.image')),
  imagePullPolicy: Type.Optional(StringEnum(['Always', 'IfNotPresent', 'Never'] as const)),
  imagePullSecrets: Type.Optional(AtomicList(LocalObjectReference, 32)),
  connection: Type.Object(
    {
      managed: Type.Optional(Managed),
      external: Type.Optional(External),
    },
    cel(
      {
        rule: 'has(self.managed) != has(self.external)',
        message:
          'spec.connection must set exactly one of managed (the operator runs the store) or external (an existing store); remove the other',
      },
      {
        rule: 'has(self.managed) == has(oldSelf.managed)',
        message:
          'spec.connection cannot switch between managed and external: create a new backend with the other branch and move the pools to it',
      },
    ),
  ),
  transport: Type.Optional(Transport),
});
export type KVCacheBackendSpec = Static<typeof KVCacheBackendSpec>;
export type MemberGroup = Static<typeof MemberGroup>;

const BackendMember = Type.Object({
  segmentID: Type.String({ maxLength: 256 }),
  clientID: Type.Optional(Type.String({ maxLength: 256 })),
  segmentName: Type.Optional(Type.String({ maxLength: 512 })),
  nodeName: Type.Optional(Type.String({ maxLength: 253 })),
  medium: Type.Optional(Type.String({ maxLength: 16 })),
  protocol: Type.Optional(Type.String({ maxLength: 32 })),
  state: Type.Optional(Type.String({ maxLength: 64 })),
});

export const KVCacheBackendStatus = Type.Object({
  ...phaseFields,
  conditions: Type.Optional(Conditions),
  endpoints: Type.Optional(
    MapList(
      Type.Object({
        name: StringEnum(['Client', 'Admin'] as const),
        address: Type.String({ maxLength: 259 }),
      }),
      ['name'],
      2,
    ),
  ),
  capacity: Type.Optional(Type.Object({ total: Type.Optional(Quantity()), used: Type.Optional(Quantity()) })),
  members: Type.Optional(MapList(BackendMember, ['segmentID'], 5000)),
  usedBy: Type.Optional(UsedBy),
});
export type KVCacheBackendStatus = Static<typeof KVCacheBackendStatus>;
