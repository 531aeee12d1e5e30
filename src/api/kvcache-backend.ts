// KVCacheBackend: the store itself (cluster-scoped; docs/concepts.md, Backend). Of its field rules,
// the ones CEL can judge live here (and in the connection and member files), the rest in the webhook.
import { DisplayFigures } from './display.ts';
import { Connection } from './kvcache-backend-connection.ts';
import {
  imageField,
  type MemberGroup,
  protocolMeanings,
  type TransportProtocol,
  transportProtocols,
} from './kvcache-backend-members.ts';
import {
  AtomicList,
  cel,
  immutable,
  LocalObjectReference,
  MapList,
  phaseFields,
  Quantity,
  type Static,
  StringEnum,
  Type,
  UsedBy,
} from './schema.ts';
import { storeImageExample } from './setting.ts';

export { type MemberGroup, type TransportProtocol, transportProtocols };

const Transport = Type.Object(
  {
    protocol: Type.Optional(
      StringEnum(transportProtocols, {
        default: 'Auto',
        description: `Transport between engines and members, for every group that sets none. ${protocolMeanings} Defaults to Auto. A change recreates the members.`,
      }),
    ),
  },
  {
    default: {},
    description:
      'The transport of every member group that does not set its own, and of the engines that attach to them. Omitted, it is {protocol: Auto}.',
  },
);

export const KVCacheBackendSpec = Type.Object(
  {
    type: Type.Optional(
      StringEnum(['Mooncake'] as const, {
        default: 'Mooncake',
        description: 'The store implementation; Mooncake is the only one. Defaults to Mooncake. Immutable.',
        ...cel(immutable('spec.type', 'create a new backend of the other type instead')),
      }),
    ),
    image: Type.Optional(
      imageField(
        'spec.image',
        `Image of the leader and of member groups that name none: a kvpool-store image (the Mooncake wheel with the kvpool-store program, which the leader and member containers run; a plain Mooncake image has no kvpool-store and cannot run), for example ${storeImageExample}. Unset, the Setting kv-cache-backend-image supplies it; admission refuses a managed backend when both are empty (on create, and when this field changes) and a value that is not an image reference. External backends run no image.`,
      ),
    ),
    imagePullPolicy: Type.Optional(
      StringEnum(['Always', 'IfNotPresent', 'Never'] as const, {
        description:
          'Pull policy of the leader and member containers. Unset: Always when the image above has the tag latest or no tag (and no digest), IfNotPresent otherwise.',
      }),
    ),
    imagePullSecrets: Type.Optional(
      AtomicList(LocalObjectReference, 32, {
        description:
          'Secrets in the operator namespace that the leader, member and tier cleanup Pods pull their images with.',
      }),
    ),
    connection: Connection,
    transport: Type.Optional(Transport),
  },
  { description: 'What store to run or reach, and how engines and members talk to it.' },
);
export type KVCacheBackendSpec = Static<typeof KVCacheBackendSpec>;

const text = (maxLength: number, description: string) =>
  Type.Optional(Type.String({ maxLength, description }));

const BackendMember = Type.Object({
  segmentID: Type.String({ maxLength: 256, description: "The store's id of the segment." }),
  clientID: text(256, 'Id of the store client (the member process) that mounted the segment.'),
  segmentName: text(
    512,
    'The address the segment advertises, host:port; several segments can share it, so it is not an identity.',
  ),
  nodeName: text(
    253,
    'Node of the member Pod the segment was matched to by address; absent when no Pod or several match.',
  ),
  medium: text(16, "DRAM or VRAM: the matched member Pod's group medium; absent when unmatched."),
  protocol: text(
    32,
    'The protocol the member registered with, in the store’s spelling; an echo of its request, not proof of the transport in use.',
  ),
  state: text(
    64,
    "The store's state of the segment, for example OK, Draining, Drained, GracefullyUnmounting, Unmounting or Undefined.",
  ),
});

const instant = (description: string) => Type.String({ format: 'date-time', maxLength: 40, description });

const objectCount = (description: string) =>
  Type.Optional(Type.Integer({ format: 'int64', minimum: 0, description }));

/** What came back after the last master change: the disk tier's objects the members re-registered (decision 45). */
const LastFailover = Type.Object(
  {
    at: instant(
      'When the operator first read the new master serving (RFC 3339, milliseconds): another admin address than the master read before, or the same address whose request counters started again (a restarted master).',
    ),
    master: Type.String({ maxLength: 259, description: "The new master's admin address, host:port." }),
    tierObjectsBefore: objectCount(
      'Objects on the disk tier the previous master last reported (its file_cache_nums_): what the members could re-register. Absent when the operator did not read the previous master, or the backend has no disk tier.',
    ),
    tierBytesBefore: Type.Optional(
      Quantity({
        description:
          'Bytes of those objects (the previous master’s master_allocated_file_size_bytes). Absent like tierObjectsBefore.',
      }),
    ),
    reRegisteredObjects: objectCount(
      "Objects on the disk tier the new master reports (its file_cache_nums_; it starts empty, so these are the members' re-registrations), followed until they reach tierObjectsBefore and then kept. Objects written after the change that reached the tier meanwhile count too. Absent when the master does not report it or the backend has no disk tier; memory-resident objects are never re-registered.",
    ),
    reRegisteredBytes: Type.Optional(
      Quantity({
        description:
          "Bytes of those objects (the new master's master_allocated_file_size_bytes). Absent like reRegisteredObjects.",
      }),
    ),
    dramKeysBefore: objectCount(
      'Objects the previous master last indexed (its master_key_count; with a disk tier, objects only on the tier count too). Absent when the operator did not read the previous master.',
    ),
    dramBytesBefore: Type.Optional(
      Quantity({
        description:
          "Bytes of memory those objects held (the previous master's master_allocated_bytes). Absent like dramKeysBefore.",
      }),
    ),
    dramKeysAfter: objectCount(
      'Objects with a memory replica the new master reports, followed for 15 s after it took over: about dramKeysBefore when the store replicates its metadata (electionBackend Etcd), 0 when the new master started empty. Absent until read.',
    ),
    dramBytesAfter: Type.Optional(
      Quantity({
        description:
          "Bytes of memory those objects hold (the new master's master_allocated_bytes). Absent like dramKeysAfter.",
      }),
    ),
    warmAt: Type.Optional(
      instant(
        'When re-registration was complete (RFC 3339, milliseconds): the first reading whose figures reached tierObjectsBefore and tierBytesBefore, or, when they do not (or were not read), the last reading at which they grew, once they have held for 45 s (moved again if a late member re-registers more). Absent while the members are re-registering, and for a backend without a disk tier.',
      ),
    ),
  },
  {
    description:
      "The last time a new master took over (a failover, a handover, a restarted master), as the operator saw it: the objects in memory before and after, and what the members re-registered from their disk tiers. Without replicated metadata every key held only in memory is lost on such a change; with it (electionBackend Etcd) the new master serves the index it followed. Absent until the operator sees a master change; the figures are the master's own (absent is not zero).",
  },
);

export const KVCacheBackendStatus = Type.Object(
  {
    ...phaseFields({
      phase:
        'Provisioning (the leader is not serving yet, or capacity has not been read), Ready (the leader serves, members are mounted, capacity is not zero), Degraded (the leader serves but members are missing, stuck or report no capacity, or no image resolves, or an object kvpool does not control holds the name of one of its objects: RolloutComplete=False ChildConflict names it), Error (the leader is unreachable, unschedulable or crash-looping) or Deleting.',
      conditions:
        'LeaderAvailable, CapacityObserved, MembersMounted, PoolWrites and Deletable; RolloutComplete for managed backends, ElectionObserved while an election runs, TierWasEmpty and TierWritable with a disk tier, MetadataReplicated and EtcdAvailable with electionBackend Etcd. Only the first three decide the phase.',
    }),
    endpoints: Type.Optional(
      MapList(
        Type.Object({
          name: StringEnum(['Client', 'Admin'] as const, {
            description:
              'Client: the RPC address engines and members dial. Admin: the admin and metrics address the operator reads.',
          }),
          address: Type.String({ maxLength: 259, description: 'host:port of the address.' }),
        }),
        ['name'],
        2,
        {
          description:
            'The store’s addresses. Managed: <name>-leader.<operator namespace>.svc:50051 (Client) and :9003 (Admin), once the leader Deployment and Service exist. External: copied from spec.connection.external.endpoints.',
        },
      ),
    ),
    capacity: Type.Optional(
      Type.Object(
        {
          total: Type.Optional(
            Quantity({
              description:
                "Bytes the store can hold: its memory segments, plus the file tier's capacity when a tier is declared or the store is external.",
            }),
          ),
          used: Type.Optional(Quantity({ description: 'Bytes of that capacity allocated to objects.' })),
        },
        {
          description:
            'What the master reports on /metrics; absent, never zero, while it has not been read (a failed read clears it).',
        },
      ),
    ),
    display: DisplayFigures({ capacity: 'status.capacity.total', used: 'status.capacity.used' }),
    members: Type.Optional(
      MapList(BackendMember, ['segmentID'], 5000, {
        description:
          'One row per segment the leader lists, joined to member Pods by address; the previous rows stay while a listing fails.',
      }),
    ),
    lastFailover: Type.Optional(LastFailover),
    replication: Type.Optional(
      Type.Object(
        {
          standbys: Type.Integer({
            format: 'int32',
            minimum: 0,
            description: 'Leader replicas running a standby master, as read.',
          }),
          following: Type.Integer({
            format: 'int32',
            minimum: 0,
            description: 'Of those, the standbys that report their place in the OpLog (MetadataReplicated).',
          }),
          lagEntries: Type.Optional(
            Type.Integer({
              format: 'int64',
              minimum: 0,
              description:
                'OpLog entries the nearest standby is behind the primary (its ha_oplog_standby_lag). Absent until read.',
            }),
          ),
          etcdMembers: Type.Optional(
            Type.Integer({
              format: 'int32',
              minimum: 0,
              description: 'Members of the etcd the operator runs for the store.',
            }),
          ),
          etcdHealthy: Type.Optional(
            Type.Integer({
              format: 'int32',
              minimum: 0,
              description: 'Of those, the members whose /health answered true (EtcdAvailable).',
            }),
          ),
        },
        {
          description:
            "With replicated metadata (electionBackend Etcd): who follows the serving master's OpLog, and the etcd it is kept in, as the operator last read them.",
        },
      ),
    ),
    usedBy: Type.Optional(
      UsedBy('The KVCachePools that name this backend; while any remains, deletion waits (Deletable=False).'),
    ),
  },
  { description: 'What the operator last observed of the store; every figure is absent until observed.' },
);
export type KVCacheBackendStatus = Static<typeof KVCacheBackendStatus>;
export type LastFailover = Static<typeof LastFailover>;

/** The reasons of the RolloutComplete condition (managed backends). */
export const RolloutCompleteReason = {
  Complete: 'Complete',
  UpdateNotObserved: 'UpdateNotObserved',
  ReplicasPending: 'ReplicasPending',
  Progressing: 'Progressing',
  MembersRolling: 'MembersRolling',
  /** An object kvpool does not control holds the name of a child: it is left as it is, and not applied. */
  ChildConflict: 'ChildConflict',
} as const;
