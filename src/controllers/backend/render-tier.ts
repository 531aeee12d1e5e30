// What a local disk tier adds to a member Pod (spec §7): offload env, the host directory, survey and preStop.

import type { MemberGroup } from '../../api/kvcache-backend.ts';
import { shellQuote } from '../../shell.ts';
import { parseQuantityBytes } from './quantity.ts';
import { smallJobResources, storeSecurityContext } from './render-hardening.ts';

export type LocalDisk = NonNullable<MemberGroup['localDisks']>[number];
export type EnvVar = { name: string; value?: string; valueFrom?: { fieldRef: { fieldPath: string } } };

export const localDiskVolume = 'local-disk';
// Operator-chosen buckets: the store's defaults (256 MB / 500 keys) would leave modest tiers empty.
const bucketSizeLimitBytes = '16777216';
const bucketKeysLimit = '64';
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
    { name: 'MOONCAKE_OFFLOAD_BUCKET_SIZE_LIMIT_BYTES', value: bucketSizeLimitBytes },
    { name: 'MOONCAKE_OFFLOAD_BUCKET_KEYS_LIMIT', value: bucketKeysLimit },
    ...(capacity > 0n
      ? [
          { name: 'MOONCAKE_OFFLOAD_TOTAL_SIZE_LIMIT_BYTES', value: String(capacity) },
          { name: 'MOONCAKE_OFFLOAD_BUCKET_MAX_TOTAL_SIZE', value: String(capacity) },
        ]
      : []),
    ...(keyLimit > 0 ? [{ name: 'MOONCAKE_OFFLOAD_TOTAL_KEYS_LIMIT', value: String(keyLimit) }] : []),
    ...evictionEnv(disk.eviction),
  ];
}

/** The tier directory; `Directory`, never `DirectoryOrCreate`: the admin prepares it with the right owner. */
export function tierVolume(disk: LocalDisk) {
  return { name: localDiskVolume, hostPath: { path: disk.path, type: 'Directory' } };
}

/** Counts the tier directory's entries (-1 if unreadable) and `/` as a control; never fails the Pod. */
export function surveyScript(path: string): string {
  const quoted = shellQuote(path);
  return [
    `if ls -A ${quoted} >/dev/null 2>&1; then entries=$(($(ls -A ${quoted} | wc -l))); else entries=-1; fi`,
    'control=$(($(ls -A / | wc -l)))',
    `printf 'entries=%s control=%s' "$entries" "$control" > /dev/termination-log`,
    'exit 0',
  ].join('; ');
}

/** The init container whose termination message tells whether the tier started empty; it runs as the member does. */
export function surveyContainer(disk: LocalDisk, image: string, pullPolicy: string, user: number) {
  return {
    name: 'local-disk-survey',
    image,
    imagePullPolicy: pullPolicy,
    command: ['sh', '-c', surveyScript(disk.path)],
    resources: smallJobResources,
    securityContext: storeSecurityContext([], { runAsUser: user }),
    volumeMounts: [{ name: localDiskVolume, mountPath: disk.path, readOnly: true }],
    terminationMessagePolicy: 'File',
  };
}

/** preStop: deregister the tier first so peers get clean misses while the process drains for `grace`. */
export function unmountHook(port: number, grace: number) {
  // The member's REST server listens on the Pod IP (MOONCAKE_LOCAL_HOSTNAME), not on every address.
  const url = `http://' + os.environ.get('MOONCAKE_LOCAL_HOSTNAME', '127.0.0.1') + ':${port}/api/unmount_local_disk`;
  const script =
    `import os, urllib.request; urllib.request.urlopen(urllib.request.Request('${url}', ` +
    `data=b'{"grace_period_seconds": ${grace}}', headers={'Content-Type': 'application/json'}, ` +
    `method='POST'), timeout=${grace + hookMarginSeconds})`;
  return { preStop: { exec: { command: ['python3', '-c', script] } } };
}
