// A managed KVCacheBackend's member groups (docs/concepts.md, Backend): per-node segments and the optional
// disk tier. The rules CEL can judge live here; position, extraArgs and label rules in the webhook.

import { placementFields } from './placement.ts';
import {
  AtomicList,
  cel,
  dns1123Subdomain,
  EnvVar,
  MapList,
  nonNegativeBytes,
  positiveBytes,
  Quantity,
  type Static,
  StringEnum,
  StringMap,
  Type,
} from './schema.ts';
import { SecurityContext } from './security-context.ts';
import { tierPathRules } from './tier-path.ts';

export const transportProtocols = ['Auto', 'TCP', 'RDMA', 'EFA', 'CANN', 'ROCM', 'MUSA', 'MACA'] as const;
export type TransportProtocol = (typeof transportProtocols)[number];

/** What each transport protocol does to a member, for the fields that choose one. */
export const protocolMeanings =
  'Auto and TCP run over TCP; RDMA and EFA put members on the host network with IPC_LOCK and SYS_RESOURCE and request fabric devices (see fabricInterfaceCount); CANN, ROCM, MUSA and MACA use the vendor transport.';

export const imageField = (field: string, description: string) =>
  Type.String({
    maxLength: 512,
    description,
    ...cel({
      rule: "!self.matches('^\\\\s*$') && !self.matches('\\\\s')",
      message: `${field} must be an image reference without spaces, for example registry.example.com/store:1.0; remove the field to use the default image`,
    }),
  });

const GroupTransport = Type.Object(
  {
    protocol: Type.Optional(
      StringEnum(transportProtocols, {
        description: `Transport of this group's members; unset inherits spec.transport.protocol. ${protocolMeanings} A change recreates the group's members.`,
      }),
    ),
  },
  { description: "This group's transport, overriding spec.transport." },
);

const percent = (description: string) =>
  Type.Integer({ format: 'int32', minimum: 1, maximum: 100, description });

const Eviction = Type.Object(
  {
    enabled: Type.Optional(
      Type.Boolean({
        default: true,
        description:
          'Whether the tier evicts files to make room. Defaults to true. With false the tier fills, then takes no more writes while its content stays readable; policy and watermark are then refused.',
      }),
    ),
    policy: Type.Optional(
      StringEnum(['FIFO', 'LRU'] as const, {
        description: "Which files are evicted first: FIFO or LRU. Unset leaves the store's default (FIFO).",
      }),
    ),
    watermark: Type.Optional(
      Type.Object(
        {
          high: percent('Usage, in percent of localDisks[].capacity (1 to 100), at which eviction starts.'),
          low: percent(
            'Usage, in percent of localDisks[].capacity (1 to 100), that eviction brings the tier down to; must be below high.',
          ),
        },
        {
          description:
            "Eviction thresholds as percentages of localDisks[].capacity, which must then be set; unset leaves the store's own.",
          ...cel({
            rule: 'self.low < self.high',
            message:
              'localDisks[].eviction.watermark.low must be below watermark.high, for example high: 90, low: 80',
          }),
        },
      ),
    ),
  },
  {
    description: "How a full tier makes room; unset leaves the store's defaults.",
    ...cel(
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
  },
);

const LocalDisk = Type.Object(
  {
    path: Type.String({
      minLength: 1,
      maxLength: 4096,
      description:
        "Directory on every selected node that holds the tier, for example /var/lib/kvcache. It must already exist and be writable by the store image's user (uid 65532); the operator never creates it. Absolute, spelled one way only (no //, . or .. component, trailing / or surrounding whitespace), not a system directory (/, /home, /opt, /tmp, /var, /var/lib and the like) and not at or inside /bin, /boot, /dev, /etc, /lib*, /proc, /run, /sbin, /sys, /usr or the state of the kubelet, containerd, Docker or etcd under /var/lib. Immutable.",
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
        ...tierPathRules(),
      ),
    }),
    capacity: Type.Optional(
      Quantity({
        description:
          "Most bytes the tier holds on each member (a quantity such as 100Gi), at least 16Mi (one bucket); unset leaves the store's own ceiling. status.capacity counts it as the tier's capacity.",
        ...cel({
          rule: "quantity(string(self)).isInteger() && quantity(string(self)).compareTo(quantity('16Mi')) >= 0",
          message:
            'localDisks[].capacity must be at least one 16Mi bucket (and a whole number of bytes); raise it, or remove it to use the store ceiling',
        }),
      }),
    ),
    keyLimit: Type.Optional(
      Type.Integer({
        format: 'int64',
        description:
          "Most objects the tier holds on each member, at least 64 (one bucket of keys); unset leaves the store's own ceiling.",
        ...cel({
          rule: 'self >= 64',
          message:
            'localDisks[].keyLimit must be at least one bucket of keys (64); raise it, or remove it to use the store ceiling',
        }),
      }),
    ),
    eviction: Type.Optional(Eviction),
    cleanAfterDelete: Type.Optional(
      Type.Boolean({
        default: false,
        description:
          "Whether deleting the backend empties the directory's content (never the directory itself) on every node the group selects at that moment, within 5 minutes per node; a path another backend's tier shares is skipped. Defaults to false: the content stays.",
      }),
    ),
    offload: Type.Optional(
      StringEnum(['OnEviction', 'WriteThrough'] as const, {
        default: 'OnEviction',
        description:
          'Which objects the store copies to the tier. OnEviction (the default): only objects evicted from memory, so the disk is written only once memory is full, and a failover keeps only those. WriteThrough: every object, once, when its write completes, so a leader failover keeps what reached the tier (members re-register it with the new leader, checking every second); it costs one disk write per object and holds each object in memory until its bucket (64 objects or 16Mi) is written; objects in an unfilled bucket are lost on failover. Changing it restarts the leader. Defaults to OnEviction.',
      }),
    ),
    foreignContent: Type.Optional(
      StringEnum(['Refuse', 'Remove'] as const, {
        default: 'Refuse',
        description:
          "What a member does with a tier directory holding files this backend did not write: no .kvpool-tier marker, or one naming another backend's UID. Refuse (the default) keeps the member from starting, so the store never re-registers those objects; Remove empties the directory first. The backend's own files (its marker) are always kept and re-registered after a restart or a failover. Defaults to Refuse.",
      }),
    ),
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
    description: 'Absolute path on the node.',
    ...cel({ rule: "self.startsWith('/')", message: 'hostPaths[].path must be an absolute path' }),
  }),
  mountPath: Type.String({
    minLength: 1,
    maxLength: 1024,
    description:
      "Absolute path in the member container, unique in the list. Not /dev/infiniband (RDMA and EFA get their devices from the transport) and not the group's own localDisks[].path.",
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
    StringEnum(
      [
        '',
        'DirectoryOrCreate',
        'Directory',
        'FileOrCreate',
        'File',
        'Socket',
        'CharDevice',
        'BlockDevice',
      ] as const,
      {
        description:
          'What the kubelet checks (or creates) at path before mounting, as in a core/v1 hostPath volume; empty checks nothing.',
      },
    ),
  ),
  readOnly: Type.Optional(Type.Boolean({ description: 'Mounts the path read-only when true.' })),
});

const MemberGroup = Type.Object(
  {
    ...placementFields("the group's members"),
    nodeSelector: StringMap({
      description:
        'Node labels a node must carry to run a member of this group, one member per matching node. Keys and values must be label syntax. Editing it restarts no member: widening adds members, narrowing removes them and their segments (nothing is drained).',
    }),
    medium: StringEnum(['DRAM', 'VRAM'] as const, {
      description:
        "Where each member's segment lives: DRAM (host memory, requested as container memory) or VRAM (memory of the first visible accelerator, not counted in any request). Immutable per position in members.",
    }),
    capacityPerMember: Quantity({
      description:
        'Bytes of the segment each member mounts (a quantity such as 8Gi): a whole number above zero, at least 16Mi when the group declares localDisks. A DRAM group requests it as memory.',
      ...cel(positiveBytes('members[].capacityPerMember', '8Gi')),
    }),
    localBufferSize: Type.Optional(
      Quantity({
        description:
          "Bytes of each member's transfer buffer (a quantity such as 128Mi), zero or more; added to the memory request. Unset or 0 leaves the store's own default (1Gi), which the member's memory limit allows for but does not request.",
        ...cel(nonNegativeBytes('members[].localBufferSize', '128Mi')),
      }),
    ),
    image: Type.Optional(
      imageField(
        'members[].image',
        "Image of this group's members (and of its tier survey and cleanup), a kvpool-store image like spec.image; overrides spec.image and the Setting kv-cache-backend-image. Admission refuses a value that is not an image reference.",
      ),
    ),
    transport: Type.Optional(GroupTransport),
    fabricInterfaceCount: Type.Optional(
      Type.Integer({
        format: 'int32',
        minimum: 1,
        maximum: 64,
        description:
          'Fabric interfaces each member requests, 1 to 64; unset means 1. RDMA requests device.gpustack.ai/rdma.shared: 1 for one and device.gpustack.ai/rdma: N for more; EFA requests vpc.amazonaws.com/efa: N. Other protocols ignore it, and admission warns.',
      }),
    ),
    extraArgs: Type.Optional(
      AtomicList(Type.String({ minLength: 1, maxLength: 4096 }), 64, {
        description:
          'Extra store settings for the members, each -key=value, passed as -D key=value. Admission refuses keys derived from fields: global_segment_size, local_buffer_size, master_server_address, metadata_server, protocol, device_name, local_hostname, tenant_id, enable_ssd_offload and ssd_offload_path.',
      }),
    ),
    extraEnv: Type.Optional(
      MapList(EnvVar, ['name'], 64, {
        description:
          'Extra environment of the member container, after what the operator renders. Admission refuses the names it renders: MOONCAKE_TE_META_DATA_SERVER, MOONCAKE_MASTER, MOONCAKE_PROTOCOL, MOONCAKE_LOCAL_HOSTNAME, MOONCAKE_GLOBAL_SEGMENT_SIZE, MOONCAKE_LOCAL_BUFFER_SIZE, MOONCAKE_DEVICE, MOONCAKE_TENANT_ID, every MOONCAKE_OFFLOAD_*, MC_TE_METRIC, KUBERNETES_POD_NAMESPACE and the accelerator *_VISIBLE_DEVICES variables.',
      }),
    ),
    localDisks: Type.Optional(
      MapList(LocalDisk, ['path'], 1, {
        description:
          "A disk tier under the group's memory segments: objects evicted from memory are offloaded to files there. At most one entry, on at most one group per backend. Admission refuses adding, removing or moving the tier of an existing group (removing the last group takes its tier along).",
      }),
    ),
    hostPaths: Type.Optional(
      MapList(HostPath, ['mountPath'], 32, {
        description: 'Node paths mounted into the members, at most 32, keyed by mountPath.',
      }),
    ),
    securityContext: Type.Optional(SecurityContext),
    runtimeClassName: Type.Optional(
      Type.String({
        maxLength: 253,
        pattern: dns1123Subdomain,
        description:
          "RuntimeClass of the members' Pods; the apiserver rejects the Pods when no such RuntimeClass exists.",
      }),
    ),
  },
  {
    description:
      'One group of members: a DaemonSet <name>-member-<i> (i is the position) running one member per selected node, each mounting one memory segment.',
    ...cel(
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
  },
);

export { MemberGroup };
export type MemberGroup = Static<typeof MemberGroup>;
