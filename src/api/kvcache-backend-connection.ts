// How a KVCacheBackend reaches its store (docs/concepts.md, Backend): managed (the operator runs a
// leader and member groups) or external (an existing store it only observes).
import { MemberGroup } from './kvcache-backend-members.ts';
import { ContainerResources, placementFields } from './placement.ts';
import {
  AtomicList,
  cel,
  EnvVar,
  immutable,
  MapList,
  positiveBytes,
  Quantity,
  StringEnum,
  Type,
} from './schema.ts';

// The store's Lease timing (docs/store-program.md, "Lease timing"); kvpool-store's flags are rendered from it.
const leaseTimingField = 'spec.connection.managed.leader.leaseTiming';
const wholeSeconds = '^[1-9][0-9]{0,3}s$';
const msOrSeconds = '^[1-9][0-9]{0,6}(ms|s)$';
const LeaseDuration = (field: string, pattern: string, fallback: string, description: string) =>
  Type.String({
    maxLength: 9,
    default: fallback,
    description,
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
    leaseDuration: Type.Optional(
      LeaseDuration(
        'leaseDuration',
        wholeSeconds,
        '8s',
        'How long a Lease record stays valid to a standby after it last changed, in whole seconds (8s). Longer survives longer API-server outages; a hard-killed leader is replaced about this long after its last renewal. Defaults to 8s.',
      ),
    ),
    renewDeadline: Type.Optional(
      LeaseDuration(
        'renewDeadline',
        msOrSeconds,
        '7s',
        'How long after sending its last successful renewal a leader keeps its master; then it stops it and turns unready. At least 500ms below leaseDuration, so a standby can never take over while it still serves. Defaults to 7s.',
      ),
    ),
    retryPeriod: Type.Optional(
      LeaseDuration(
        'retryPeriod',
        msOrSeconds,
        '250ms',
        'How often the leader renews and a standby tries, in ms or s; at least 100ms and at most half of renewDeadline. Defaults to 250ms.',
      ),
    ),
  },
  {
    description:
      'The Lease timing of the election: which API-server outages the serving leader survives and how fast a standby replaces a dead one (docs/store-program.md has the measured table). Admission refuses unsafe sets. A change restarts the leader Pods.',
    ...cel(
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
  },
);

const etcdField = 'spec.connection.managed.leader.etcd';
const EtcdStorage = Type.Object(
  {
    size: Type.Optional(
      Quantity({
        description:
          "Bytes of each etcd member's volume (a quantity such as 1Gi). Defaults to 1Gi: the OpLog is compacted, so the store's metadata, not its data, fills it (docs/failover-and-sizing.md). Immutable.",
        ...cel(
          positiveBytes('leader.etcd.storage.size', '1Gi'),
          immutable(`${etcdField}.storage.size`, 'create a new backend to resize'),
        ),
      }),
    ),
    storageClassName: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 253,
        description:
          "StorageClass of the members' volumes; unset takes the cluster's default class. Immutable.",
        ...cel(immutable(`${etcdField}.storage.storageClassName`, 'create a new backend to move its etcd')),
      }),
    ),
  },
  { description: "Each etcd member's data volume (a PersistentVolumeClaim per member)." },
);
const ExternalEtcd = Type.Object(
  {
    endpoints: AtomicList(
      Type.String({
        minLength: 1,
        maxLength: 259,
        description: 'https://host:port of one etcd member, for example https://etcd-0.etcd.example:2379.',
        ...cel({
          rule: "self.matches('^https://([A-Za-z0-9.-]+|\\\\[[0-9A-Fa-f:.]+\\\\]):[0-9]{1,5}$')",
          message: `${etcdField}.external.endpoints[] must be https://host:port (TLS only), for example https://etcd-0.etcd.example:2379`,
        }),
      }),
      7,
      {
        minItems: 1,
        description: 'The etcd members the masters dial, over TLS with the client certificate.',
      },
    ),
    clientSecretName: Type.String({
      minLength: 1,
      maxLength: 253,
      description:
        "A Secret in the operator namespace holding ca.crt (the CA that signed etcd's serving certificates), tls.crt and tls.key (a client certificate etcd accepts). Only the leader Pods mount it.",
    }),
  },
  { description: 'An etcd the store uses instead of one the operator runs.' },
);
const Etcd = Type.Object(
  {
    replicas: Type.Optional(
      Type.Integer({
        format: 'int32',
        enum: [1, 3, 5],
        description:
          'Members of the etcd the operator runs for the store (a StatefulSet <name>-etcd): 1, 3 or 5. Defaults to 3, which survives the loss of one. Immutable.',
        ...cel(immutable(`${etcdField}.replicas`, 'create a new backend for another etcd size')),
      }),
    ),
    storage: Type.Optional(EtcdStorage),
    external: Type.Optional(ExternalEtcd),
  },
  {
    description:
      "The etcd that holds the store's replicated metadata (electionBackend Etcd): one the operator runs (TLS between its members and to the masters, only the leader Pods may reach it), or external. Defaults to 3 members of 1Gi each.",
    ...cel(
      {
        rule: '!has(self.external) || (!has(self.replicas) && !has(self.storage))',
        message: `${etcdField}: external names an etcd the operator does not run; remove replicas and storage, or remove external`,
      },
      {
        rule: 'has(self.external) == has(oldSelf.external)',
        message: `${etcdField}.external cannot be added or removed: the store's metadata lives in its etcd; create a new backend instead`,
      },
    ),
  },
);

const Leader = Type.Object(
  {
    ...placementFields('the leader (and, with electionBackend Etcd, its etcd)'),
    resources: Type.Optional(
      ContainerResources(
        'spec.connection.managed.leader.resources',
        "The leader container's requests and limits; unset ones keep the defaults, 250m CPU and 256Mi requested, 2Gi memory limit. A master's memory grows with its index (about 1 KiB per object), so raise the limit for stores of millions of objects.",
      ),
    ),
    leaseTiming: Type.Optional(LeaseTiming),
    replicas: Type.Optional(
      Type.Integer({
        format: 'int32',
        minimum: 1,
        maximum: 5,
        default: 1,
        description:
          'Leader Pods, 1 to 5. Defaults to 1. Above 1 the extra Pods are unready standbys that take over through the election, so it needs electionBackend Kubernetes or Etcd; the Deployment then shows N desired, 1 ready.',
      }),
    ),
    electionBackend: Type.Optional(
      StringEnum(['Kubernetes', 'Etcd', 'None'] as const, {
        default: 'Kubernetes',
        description:
          'Kubernetes: a Lease <name>-leader in the operator namespace picks the serving leader, at any replica count; a new leader starts with an empty index. Etcd: every replica runs the master, the serving one writes its metadata to an OpLog in etcd (leader.etcd) and the standbys follow it, so a failover keeps every key. None: one leader, serving from its start (replicas must then be 1). Defaults to Kubernetes. A change restarts the leader and every member, losing the cache.',
      }),
    ),
    etcd: Type.Optional(Etcd),
    memberAddressing: Type.Optional(
      StringEnum(['Service', 'Lease'] as const, {
        default: 'Service',
        description:
          'How members find the leader while an election runs: Service (<name>-leader.<namespace>.svc:50051) or Lease (the holder the Lease names; electionBackend Kubernetes only). Defaults to Service. Ignored with electionBackend None; a change recreates every member.',
      }),
    ),
    allocationStrategy: Type.Optional(
      StringEnum(['FreeRatioFirst', 'Random'] as const, {
        default: 'FreeRatioFirst',
        description:
          'How the leader picks the segment for a new object: FreeRatioFirst (the segment with the largest free share) or Random. Defaults to FreeRatioFirst.',
      }),
    ),
    multiTenancy: Type.Optional(
      Type.Boolean({
        default: true,
        description:
          "Whether the leader keeps a tenant ledger, so each Binding's reuse domain has its own quota. Defaults to true. With false every write lands in one shared tenant and the backend serves one reuse domain; admission refuses turning it off while a KVCachePool uses the backend.",
      }),
    ),
    extraArgs: Type.Optional(
      AtomicList(Type.String({ minLength: 1, maxLength: 4096 }), 64, {
        description:
          "Extra mooncake_master flags, one -key or -key=value token per entry, after the flags the operator derives (a repeated key's later value wins). Admission refuses flags derived from fields or that would break the store: ports, addresses, election, multi-tenancy and quota policy, offload, CXL, oplog and etcd, snapshot and memory_allocator.",
      }),
    ),
    extraEnv: Type.Optional(
      MapList(EnvVar, ['name'], 64, {
        description:
          'Extra environment of the leader container, after what the operator renders. Admission refuses KUBERNETES_POD_NAME, KUBERNETES_POD_NAMESPACE and KUBERNETES_POD_IP.',
      }),
    ),
  },
  {
    description:
      'The leader (the Mooncake master): a Deployment and Service <name>-leader in the operator namespace. {} takes every default.',
    ...cel(
      {
        rule: "!has(self.replicas) || self.replicas <= 1 || !has(self.electionBackend) || self.electionBackend != 'None'",
        message:
          'spec.connection.managed.leader.replicas above 1 needs an election: set leader.electionBackend to Etcd (failovers keep the cache) or Kubernetes, or leader.replicas to 1',
        fieldPath: '.replicas',
      },
      {
        rule: "!has(self.leaseTiming) || !has(self.electionBackend) || self.electionBackend == 'Kubernetes'",
        message: `${leaseTimingField} times the Lease election only: remove it, or set leader.electionBackend to Kubernetes`,
        fieldPath: '.leaseTiming',
      },
      {
        rule: "!has(self.etcd) || (has(self.electionBackend) && self.electionBackend == 'Etcd')",
        message: `${etcdField} is used by electionBackend Etcd only: set leader.electionBackend to Etcd, or remove leader.etcd`,
        fieldPath: '.etcd',
      },
      {
        rule: "!has(self.memberAddressing) || self.memberAddressing != 'Lease' || !has(self.electionBackend) || self.electionBackend == 'Kubernetes'",
        message:
          'spec.connection.managed.leader.memberAddressing Lease follows the Kubernetes Lease, which electionBackend Etcd and None do not have: set it to Service',
        fieldPath: '.memberAddressing',
      },
    ),
  },
);

const Managed = Type.Object(
  {
    leader: Leader,
    members: AtomicList(MemberGroup, 32, {
      minItems: 1,
      description:
        "Member groups, 1 to 32; together their segments are the store's capacity. A group's position is its identity: append new groups and remove only the last; admission refuses reordering, removing from the middle, and changing the medium at a position. At most one group may declare localDisks.",
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
      Type.Object(
        {
          gracePeriodSeconds: Type.Optional(
            Type.Integer({
              format: 'int32',
              minimum: 0,
              maximum: 3600,
              description:
                'Seconds a stopping member of a disk-tier group keeps running after its tier is deregistered (peers then get clean misses), 0 to 3600. Unset means 0. Its Pod gets this plus 60 seconds to terminate.',
            }),
          ),
        },
        { description: 'How members of the group with localDisks stop; other groups ignore it.' },
      ),
    ),
  },
  {
    description:
      "The operator runs the store in its own namespace: a leader, and one member DaemonSet per group. Admission refuses a backend name that makes a rendered object's name an invalid DNS-1035 label (at most 63 characters, starting with a letter, no dots).",
  },
);

const Endpoint = Type.Object({
  name: StringEnum(['Client', 'Admin'] as const, {
    description:
      'Client: the RPC address engines dial (usually port 50051). Admin: the admin and metrics address the operator reads (usually port 9003).',
  }),
  address: Type.String({
    minLength: 1,
    maxLength: 259,
    description:
      'host:port and nothing else (no scheme, path, user or spaces), with a port from 1 to 65535; for example store.example.com:50051.',
    ...cel({
      rule: "self.matches('^([A-Za-z0-9.-]+|\\\\[[0-9A-Fa-f:.]+\\\\]):[0-9]{1,5}$') && int(self.substring(self.lastIndexOf(':') + 1)) >= 1 && int(self.substring(self.lastIndexOf(':') + 1)) <= 65535",
      message:
        'connection.external.endpoints[].address must be host:port with a port in 1..65535 and nothing else (no scheme, path, user or spaces), for example store.example.com:50051',
    }),
  }),
});

const External = Type.Object(
  {
    endpoints: MapList(Endpoint, ['name'], 2, {
      description: 'The store’s two addresses, keyed by name: exactly one Client and one Admin entry.',
      ...cel({
        rule: "self.exists(e, e.name == 'Client') && self.exists(e, e.name == 'Admin')",
        message:
          'spec.connection.external.endpoints needs both a Client (the RPC address engines dial, :50051) and an Admin (the admin/metrics address, :9003) entry',
      }),
    }),
  },
  {
    description:
      'An existing Mooncake store: the operator creates nothing for it, reads its health and capacity on the Admin address and hands the Client address to engines.',
  },
);

export const Connection = Type.Object(
  {
    managed: Type.Optional(Managed),
    external: Type.Optional(External),
  },
  {
    description:
      'Where the store comes from: exactly one of managed (the operator runs it) or external (an existing store). The branch cannot change; create a new backend and move the pools to it instead.',
    ...cel(
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
  },
);
