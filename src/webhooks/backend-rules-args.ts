// extraArgs and extraEnv of a managed KVCacheBackend: entries the operator derives from fields, or that
// would undo what it renders, are refused, each with its own reason.

import type { EnvVar } from '../api/schema.ts';
import { visibleDeviceVars } from '../vocabulary/member-env.ts';

interface Refusal {
  why: string;
  fix: string;
}

const removeIt = 'remove it';
const fromField = (field: string): Refusal => ({
  why: `is derived from ${field}`,
  fix: `set ${field} instead and remove the flag`,
});
const fixedBy = (why: string): Refusal => ({ why, fix: removeIt });

const election: Refusal = {
  why: 'is derived from spec.connection.managed.leader.electionBackend (a Kubernetes Lease, or etcd with Etcd)',
  fix: 'set leader.electionBackend instead and remove the flag',
};
const podIdentity = fixedBy("is derived from the leader Pod's own identity, which the election needs");
const tier: Refusal = {
  why: "is derived from members[].localDisks, so the leader cannot drift from the members' tier declaration",
  fix: 'declare or remove the tier with members[].localDisks instead and remove the flag',
};
const quotaPolicy = fixedBy(
  'is derived from the backend (the leader reads the tenant quota policy the operator renders into <name>-tenant-quota-policy)',
);
const cxl = fixedBy(
  'would replace allocationStrategy with CXL memory and advertise capacity the members do not hold',
);
const oplog: Refusal = {
  why: 'is derived from spec.connection.managed.leader.electionBackend Etcd and leader.etcd (the masters reach etcd through kvpool-store over TLS)',
  fix: 'set leader.electionBackend to Etcd (and leader.etcd for an external etcd) instead and remove the flag',
};
const snapshot = fixedBy(
  'would let the leader restore a saved index whose entries can point at bytes another key now holds',
);

// gflags reads more flags from a file or from FLAGS_<name> variables: any flag refused here could hide there.
const flagSource: Refusal = {
  why: 'makes the leader read further flags from a file or the environment, where a flag the operator derives could hide',
  fix: 'pass each flag as its own extraArgs entry instead',
};

const leaderRefusals = new Map<string, Refusal>([
  ['flagfile', flagSource],
  ['fromenv', flagSource],
  ['tryfromenv', flagSource],
  ['rpc_port', fixedBy('is derived from the backend (the leader always serves RPC on 50051)')],
  ['metrics_port', fixedBy('is derived from the backend (the operator reads health and metrics on 9003)')],
  ['allocation_strategy', fromField('spec.connection.managed.leader.allocationStrategy')],
  ['enable_multi_tenants', fromField('spec.connection.managed.leader.multiTenancy')],
  ['tenant_quota_connector_uri', quotaPolicy],
  ['tenant_quota_connector_type', quotaPolicy],
  ['enable_ha', election],
  ['ha_backend_type', election],
  ['ha_backend_connstring', election],
  ['cluster_id', fixedBy("is derived from the backend (it names the store's keys in etcd)")],
  ['pod_name', podIdentity],
  ['pod_namespace', podIdentity],
  ['enable_offload', tier],
  ['offload_on_evict', tier],
  ['rpc_address', fixedBy('is derived from the backend (the leader always advertises its Pod IP)')],
  [
    'port',
    fixedBy(
      'is the deprecated spelling of rpc_port and would look like it moved the RPC port while the Service still points at 50051',
    ),
  ],
  [
    'rpc_interface',
    fixedBy('would make the leader advertise an address other than its Pod IP, which members dial'),
  ],
  ['enable_cxl', cxl],
  ['cxl_path', cxl],
  ['cxl_size', cxl],
  ['enable_oplog', oplog],
  ['etcd_endpoints', oplog],
  ['enable_snapshot', snapshot],
  ['enable_snapshot_restore', snapshot],
  [
    'memory_allocator',
    fixedBy(
      "is fixed by this operator: segments are carved with the store's default allocator, which the capacity and quota figures assume",
    ),
  ],
]);

function leaderRefusal(key: string): Refusal | undefined {
  return leaderRefusals.get(key) ?? (key.startsWith('snapshot_') ? snapshot : undefined);
}

const memberField = (field: string): Refusal => ({
  why: `is derived from ${field}`,
  fix: `set ${field} instead and remove the entry`,
});
const memberTier = memberField('members[].localDisks');

const memberRefusals = new Map<string, Refusal>([
  ['global_segment_size', memberField('members[].capacityPerMember')],
  ['local_buffer_size', memberField('members[].localBufferSize')],
  [
    'master_server_address',
    fixedBy('is derived from the backend (members dial the leader as leader.memberAddressing says)'),
  ],
  [
    'metadata_server',
    fixedBy('is derived from the backend (members exchange transfer metadata peer to peer)'),
  ],
  ['protocol', memberField('members[].transport.protocol or spec.transport.protocol')],
  ['device_name', fixedBy('is left unset on purpose, so the transfer engine uses every device')],
  ['local_hostname', fixedBy("is derived from the member Pod's IP, which the leader and peers dial")],
  [
    'tenant_id',
    fixedBy('is left unset on purpose (tenants are the domains of KVCachePoolBindings, chosen per engine)'),
  ],
  ['enable_ssd_offload', memberTier],
  ['ssd_offload_path', memberTier],
]);

const leaderEnv = ['KUBERNETES_POD_NAME', 'KUBERNETES_POD_NAMESPACE', 'KUBERNETES_POD_IP'];
const memberEnv = [
  'MOONCAKE_TE_META_DATA_SERVER',
  'MOONCAKE_MASTER',
  'MOONCAKE_PROTOCOL',
  'MOONCAKE_LOCAL_HOSTNAME',
  'MOONCAKE_GLOBAL_SEGMENT_SIZE',
  'MOONCAKE_LOCAL_BUFFER_SIZE',
  'MOONCAKE_DEVICE',
  'MOONCAKE_TENANT_ID',
  'MC_TE_METRIC',
  'KUBERNETES_POD_NAMESPACE',
  ...visibleDeviceVars,
];

const flagKeyPattern = /^[A-Za-z0-9_][A-Za-z0-9_.-]*$/;

/** The key of `-key` / `--key=value` (dashes stripped, text before the first `=`), or undefined. */
export function flagKey(entry: string): { key: string; hasValue: boolean } | undefined {
  const dashes = entry.startsWith('--') ? 2 : entry.startsWith('-') ? 1 : 0;
  if (dashes === 0) return undefined;
  const body = entry.slice(dashes);
  const eq = body.indexOf('=');
  const key = eq < 0 ? body : body.slice(0, eq);
  return flagKeyPattern.test(key) ? { key, hasValue: eq >= 0 } : undefined;
}

/** Refusals for leader.extraArgs, one per offending entry. */
export function leaderArgsRefusals(args: readonly string[] | undefined, path: string): string[] {
  const out: string[] = [];
  (args ?? []).forEach((entry, i) => {
    const at = `${path}[${i}]`;
    const flag = flagKey(entry);
    if (!flag) {
      out.push(
        `${at}: "${entry}" is not one flag token; write it as -key or -key=value (one or two leading dashes, a key of letters, digits, '_', '.' or '-'), one flag per entry`,
      );
      return;
    }
    const refusal = leaderRefusal(flag.key);
    if (refusal) {
      out.push(`${at}: -${flag.key} ${refusal.why}; ${refusal.fix}`);
      return;
    }
    // Boolean flags also take a `no` prefix (-noenable_ha), which would switch a derived flag off.
    const negated = flag.key.startsWith('no') ? leaderRefusal(flag.key.slice(2)) : undefined;
    if (negated) {
      const key = flag.key.slice(2);
      out.push(`${at}: -${flag.key} switches -${key} off, and -${key} ${negated.why}; ${negated.fix}`);
    }
  });
  return out;
}

/** Refusals for members[i].extraArgs (rendered as `-D key=value`), one per offending entry. */
export function memberArgsRefusals(args: readonly string[] | undefined, path: string): string[] {
  const out: string[] = [];
  (args ?? []).forEach((entry, i) => {
    const at = `${path}[${i}]`;
    const flag = flagKey(entry);
    if (!flag?.hasValue) {
      out.push(
        `${at}: "${entry}" is not a -key=value entry; write it as -key=value or --key=value (the member receives it as -D key=value)`,
      );
      return;
    }
    const refusal = memberRefusals.get(flag.key);
    if (refusal) out.push(`${at}: ${flag.key} ${refusal.why}; ${refusal.fix}`);
  });
  return out;
}

/** Refusals for leader.extraEnv names the operator renders. */
export function leaderEnvRefusals(env: readonly EnvVar[] | undefined, path: string): string[] {
  return envRefusals(env, path, (name) => leaderEnv.includes(name));
}

// A member given a config file reads every setting from it and none of the environment rendered for it.
const memberConfigFile = 'MOONCAKE_CONFIG_PATH';

/** Refusals for members[i].extraEnv names the operator renders (including every MOONCAKE_OFFLOAD_*). */
export function memberEnvRefusals(env: readonly EnvVar[] | undefined, path: string): string[] {
  const configFile = (env ?? []).flatMap(({ name }, i) =>
    name === memberConfigFile
      ? [
          `${path}[${i}].name: ${name} makes the member read its whole configuration from a file instead of the environment the operator renders from the backend's fields; remove this entry and set those fields (or members[].extraArgs) instead`,
        ]
      : [],
  );
  return [
    ...configFile,
    ...envRefusals(env, path, (name) => memberEnv.includes(name) || name.startsWith('MOONCAKE_OFFLOAD_')),
  ];
}

function envRefusals(
  env: readonly EnvVar[] | undefined,
  path: string,
  rendered: (name: string) => boolean,
): string[] {
  const out: string[] = [];
  (env ?? []).forEach(({ name }, i) => {
    if (!rendered(name)) return;
    const hint = name.startsWith('MOONCAKE_OFFLOAD_')
      ? ' (the disk tier is set with members[].localDisks)'
      : '';
    out.push(
      `${path}[${i}].name: ${name} is rendered by the operator from the backend's fields${hint}; remove this entry`,
    );
  });
  return out;
}
