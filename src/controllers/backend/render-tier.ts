// What a local disk tier (`localDisks`) adds to a member Pod: offload env, the host directory, survey
// and preStop.

import type { Container, EnvVar, Lifecycle, Volume } from 'kubernetes-types/core/v1.js';
import type { MemberGroup } from '../../api/kvcache-backend.ts';
import { shellQuote } from '../../shell.ts';
import { parseQuantityBytes } from '../../vocabulary/quantity.ts';
import { smallJobResources, storeSecurityContext } from './render-hardening.ts';

export type LocalDisk = NonNullable<MemberGroup['localDisks']>[number];

export const localDiskVolume = 'local-disk';
// Operator-chosen buckets: the store's defaults (256 MB / 500 keys) would leave modest tiers empty.
export const bucketSizeLimitBytes = 16 * 1024 * 1024;
const bucketKeysLimit = '64';
// A write-through tier's offload heartbeat (decision 45): 1 s, as measured.
const writeThroughHeartbeatSeconds = '1';
// The preStop client waits this much longer than the grace it asks the member for.
const hookMarginSeconds = 10;

/** A watermark percentage as the store's ratio with exactly two decimals (90 → 0.90). */
function watermarkRatio(percent: number): string {
  return (percent / 100).toFixed(2);
}

function evictionEnv(eviction: LocalDisk['eviction']): EnvVar[] {
  if (!eviction) return [];
  if (eviction.enabled === false) {
    return [
      { name: 'MOONCAKE_OFFLOAD_BUCKET_EVICTION_POLICY', value: 'none' },
      { name: 'MOONCAKE_OFFLOAD_ENABLE_DISK_WATERMARK_EVICTION', value: 'false' },
    ];
  }
  const { policy, watermark } = eviction;
  return [
    ...(policy ? [{ name: 'MOONCAKE_OFFLOAD_BUCKET_EVICTION_POLICY', value: policy.toLowerCase() }] : []),
    ...(watermark
      ? [
          {
            name: 'MOONCAKE_OFFLOAD_DISK_EVICTION_HIGH_WATERMARK_RATIO',
            value: watermarkRatio(watermark.high),
          },
          {
            name: 'MOONCAKE_OFFLOAD_DISK_EVICTION_LOW_WATERMARK_RATIO',
            value: watermarkRatio(watermark.low),
          },
        ]
      : []),
  ];
}

/** The member's MOONCAKE_OFFLOAD_* variables; an unset or zero ceiling leaves the store's own. */
export function tierEnv(disk: LocalDisk): EnvVar[] {
  const capacity = disk.capacity === undefined ? 0n : parseQuantityBytes(disk.capacity);
  const keyLimit = disk.keyLimit ?? 0;
  return [
    { name: 'MOONCAKE_OFFLOAD_ENABLED', value: 'true' },
    { name: 'MOONCAKE_OFFLOAD_FILE_STORAGE_PATH', value: disk.path },
    { name: 'MOONCAKE_OFFLOAD_BUCKET_SIZE_LIMIT_BYTES', value: String(bucketSizeLimitBytes) },
    { name: 'MOONCAKE_OFFLOAD_BUCKET_KEYS_LIMIT', value: bucketKeysLimit },
    ...(capacity > 0n
      ? [
          { name: 'MOONCAKE_OFFLOAD_TOTAL_SIZE_LIMIT_BYTES', value: String(capacity) },
          { name: 'MOONCAKE_OFFLOAD_BUCKET_MAX_TOTAL_SIZE', value: String(capacity) },
        ]
      : []),
    ...(keyLimit > 0 ? [{ name: 'MOONCAKE_OFFLOAD_TOTAL_KEYS_LIMIT', value: String(keyLimit) }] : []),
    // Write-through is for failover: a new leader learns the tier on the next beat (the store's is 10 s).
    ...(disk.offload === 'WriteThrough'
      ? [{ name: 'MOONCAKE_OFFLOAD_HEARTBEAT_INTERVAL_SECONDS', value: writeThroughHeartbeatSeconds }]
      : []),
    ...evictionEnv(disk.eviction),
  ];
}

/** The tier directory; `Directory`, never `DirectoryOrCreate`: the admin prepares it with the right owner. */
export function tierVolume(disk: LocalDisk): Volume {
  return { name: localDiskVolume, hostPath: { path: disk.path, type: 'Directory' } };
}

/** The file members write into their tier naming the backend that owns it (decision 45). */
export const tierMarkerFile = '.kvpool-tier';

/** Who owns a tier: the backend's UID (a re-created backend of the same name gets a new one). */
export interface TierOwner {
  uid: string;
  /** namespace/name, for a reader of the marker. */
  backend: string;
}

/**
 * The survey and claim of a tier directory, run before the store can read it. It counts the entries
 * (the marker aside; -1 if unreadable) and `/` as a control, then: an empty directory, or one whose
 * marker names this backend, is claimed (marker written); anything else is another backend's or an
 * unmarked earlier tier's, which `KVPOOL_TIER_FOREIGN_CONTENT=Remove` empties first and otherwise
 * stops the Pod, so the store never re-registers it. The verdict goes to the termination message.
 */
export function surveyScript(path: string): string {
  const dir = '"$d"';
  const marker = `"$d/${tierMarkerFile}"`;
  const report = `printf 'entries=%s control=%s tier=%s marker=%s' "$entries" "$control" "$tier" "\${found:-none}" > /dev/termination-log`;
  return [
    `d=${shellQuote(path)}`,
    'control=$(($(ls -A / | wc -l)))',
    `if ! ls -A ${dir} >/dev/null 2>&1; then printf 'entries=-1 control=%s' "$control" > /dev/termination-log; exit 0; fi`,
    `entries=$(($(ls -A ${dir} | grep -cvxE '\\${tierMarkerFile}(\\.tmp)?')))`,
    `found=$(sed -n 's/^uid=//p' ${marker} 2>/dev/null | head -n 1)`,
    'if [ "$entries" -eq 0 ]; then tier=new; elif [ -n "$found" ] && [ "$found" = "$KVPOOL_TIER_OWNER" ]; then tier=own; elif [ "$KVPOOL_TIER_FOREIGN_CONTENT" = Remove ]; then tier=removed; else tier=refused; fi',
    `if [ "$tier" = removed ] && ! find ${dir} -mindepth 1 -delete; then tier=unremovable; fi`,
    `if [ "$tier" = refused ] || [ "$tier" = unremovable ]; then ${report}; echo "tier $tier: $d holds $entries entries this backend did not write (marker: \${found:-none})" >&2; exit 1; fi`,
    `printf 'uid=%s\\nbackend=%s\\n' "$KVPOOL_TIER_OWNER" "$KVPOOL_TIER_BACKEND" > "$d/${tierMarkerFile}.tmp" && mv -f "$d/${tierMarkerFile}.tmp" ${marker}`,
    report,
    'exit 0',
  ].join('; ');
}

/** The init container that surveys and claims the tier before the member starts; it runs as the member does. */
export function surveyContainer(
  disk: LocalDisk,
  owner: TierOwner,
  image: string,
  pullPolicy: string,
  user: number,
): Container {
  return {
    name: 'local-disk-survey',
    image,
    imagePullPolicy: pullPolicy,
    command: ['sh', '-c', surveyScript(disk.path)],
    env: [
      { name: 'KVPOOL_TIER_OWNER', value: owner.uid },
      { name: 'KVPOOL_TIER_BACKEND', value: owner.backend },
      { name: 'KVPOOL_TIER_FOREIGN_CONTENT', value: disk.foreignContent ?? 'Refuse' },
    ],
    resources: smallJobResources,
    securityContext: storeSecurityContext([], { runAsUser: user }),
    volumeMounts: [{ name: localDiskVolume, mountPath: disk.path }],
    terminationMessagePolicy: 'File',
  };
}

/** preStop: deregister the tier first so peers get clean misses while the process drains for `grace`. */
export function unmountHook(port: number, grace: number): Lifecycle {
  // The member's REST server listens on the Pod IP (MOONCAKE_LOCAL_HOSTNAME), not on every address.
  const url = `http://' + os.environ.get('MOONCAKE_LOCAL_HOSTNAME', '127.0.0.1') + ':${port}/api/unmount_local_disk`;
  const script =
    `import os, urllib.request; urllib.request.urlopen(urllib.request.Request('${url}', ` +
    `data=b'{"grace_period_seconds": ${grace}}', headers={'Content-Type': 'application/json'}, ` +
    `method='POST'), timeout=${grace + hookMarginSeconds})`;
  return { preStop: { exec: { command: ['python3', '-c', script] } } };
}
