// The two ways an engine learns where its cache is: a mounted client-config file (vLLM family) or
// environment variables (SGLang), as docs/on-your-cluster.md lists under "Your own engine Pods".
import type { EnvVar, Volume, VolumeMount } from 'kubernetes-types/core/v1.js';
import { hasFlag } from './argv.ts';
import {
  type CacheConnection,
  clientConfigAnnotation,
  configFileName,
  configMountPath,
  configVolumeName,
  type EngineFamily,
  type EngineRole,
  type LoadFailurePolicy,
} from './types.ts';

/** What one vehicle adds to a container and its Pod. */
export interface VehiclePlan {
  vehicle: 'file' | 'environment';
  flags: string[];
  env: EnvVar[];
  volumes: Volume[];
  mounts: VolumeMount[];
  annotations: Record<string, string>;
}

// The store client registers no segment of its own; the members hold the data.
const metadataServer = 'P2PHANDSHAKE';
const localBufferSize = 134217728;

const kvRoles: Record<EngineRole | 'none', string> = {
  none: 'kv_both',
  Prefill: 'kv_producer',
  Decode: 'kv_consumer',
};

/** The vLLM kv-transfer-config JSON for a store connector in `role`. */
function kvTransferConfig(
  engine: EngineFamily,
  role: EngineRole | undefined,
  loadFailurePolicy: LoadFailurePolicy,
): string {
  const connector = engine === 'vllm-ascend' ? 'AscendStoreConnector' : 'MooncakeStoreConnector';
  return JSON.stringify({
    kv_connector: connector,
    kv_role: kvRoles[role ?? 'none'],
    kv_load_failure_policy: loadFailurePolicy,
  });
}

/** The client-config file's JSON, every key written in a fixed order. */
function clientConfigJson(connection: CacheConnection): string {
  return JSON.stringify({
    metadata_server: metadataServer,
    master_server_address: connection.masterAddress,
    protocol: connection.protocol,
    device_name: '',
    mode: 'standalone-store',
    global_segment_size: 0,
    local_buffer_size: localBufferSize,
    ...(connection.tenantInjected ? { tenant_id: connection.domain.name } : {}),
  });
}

/** vLLM family: a connector flag, and the client config projected from a Pod annotation. */
export function fileVehicle(
  engine: EngineFamily,
  role: EngineRole | undefined,
  connection: CacheConnection,
  loadFailurePolicy: LoadFailurePolicy = 'recompute',
): VehiclePlan {
  return {
    vehicle: 'file',
    flags: ['--kv-transfer-config', kvTransferConfig(engine, role, loadFailurePolicy)],
    env: [{ name: 'MOONCAKE_CONFIG_PATH', value: `${configMountPath}/${configFileName}` }],
    volumes: [
      {
        name: configVolumeName,
        downwardAPI: {
          items: [
            {
              path: configFileName,
              fieldRef: { fieldPath: `metadata.annotations['${clientConfigAnnotation}']` },
            },
          ],
        },
      },
    ],
    mounts: [{ name: configVolumeName, mountPath: configMountPath, readOnly: true }],
    annotations: { [clientConfigAnnotation]: clientConfigJson(connection) },
  };
}

/** SGLang: the storage backend flag and the store's address and tenant in the environment. */
export function environmentVehicle(connection: CacheConnection, argv: readonly string[]): VehiclePlan {
  const hierarchical = hasFlag('sglang', argv, '--enable-hierarchical-cache')
    ? []
    : ['--enable-hierarchical-cache'];
  return {
    vehicle: 'environment',
    flags: ['--hicache-storage-backend', 'mooncake', ...hierarchical],
    env: [
      { name: 'MOONCAKE_MASTER', value: connection.masterAddress },
      { name: 'MOONCAKE_TE_META_DATA_SERVER', value: metadataServer },
      { name: 'MOONCAKE_PROTOCOL', value: connection.protocol },
      { name: 'MOONCAKE_DEVICE', value: '' },
      { name: 'MOONCAKE_GLOBAL_SEGMENT_SIZE', value: '0' },
      { name: 'MOONCAKE_LOCAL_HOSTNAME', valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } },
      ...(connection.tenantInjected ? [{ name: 'MOONCAKE_TENANT_ID', value: connection.domain.name }] : []),
    ],
    volumes: [],
    mounts: [],
    annotations: {},
  };
}

/**
 * The engine flags that give a KV cache of `dtype`. Engines have no float32 KV-cache dtype: their
 * cache is float32 when the model runs in float32 (`auto`), so a float32 domain pins the model's too.
 */
export function kvDtypeFlags(dtype: string): string[] {
  return dtype === 'float32'
    ? ['--dtype', 'float32', '--kv-cache-dtype', 'auto']
    : ['--kv-cache-dtype', dtype];
}

/** The flags that pin the cache's compatibility key: dtype (when the Setting owns it) and block size. */
export function cacheShapeFlags(
  engine: EngineFamily,
  connection: CacheConnection,
  dtypeOwned: boolean,
): string[] {
  const dtype = dtypeOwned ? kvDtypeFlags(connection.domain.dtype) : [];
  const blockFlag = engine === 'sglang' ? '--page-size' : '--block-size';
  return [...dtype, blockFlag, String(connection.domain.blockSize)];
}
