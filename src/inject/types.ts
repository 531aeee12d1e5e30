// The shapes the injection renderer reads and writes: a core/v1 subset as plain JSON, and the cache a
// container is attached to. KV-cache spec §6.

export type EngineFamily = 'vllm' | 'vllm-ascend' | 'sglang';
export type EngineRole = 'Prefill' | 'Decode';

/** Where a container is attached: the Binding, its pool and domain, and how to reach the store. */
export interface CacheConnection {
  binding: string;
  pool: string;
  domain: { name: string; blockSize: number; dtype: string };
  /** The pool's status.clientEndpoint. */
  masterAddress: string;
  /** The store's spelling of the transport, e.g. tcp. */
  protocol: string;
  /** False when the pool reports no tenant ledger: the domain is then not written as a tenant. */
  tenantInjected: boolean;
}

export interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: Record<string, unknown>;
}

export interface VolumeMount {
  name: string;
  mountPath: string;
  readOnly?: boolean;
  subPath?: string;
}

export interface Volume {
  name: string;
  [source: string]: unknown;
}

export interface Container {
  name: string;
  image?: string;
  command?: string[];
  args?: string[];
  env?: EnvVar[];
  volumeMounts?: VolumeMount[];
  [field: string]: unknown;
}

/** The JSON written to the `kvcache.gpustack.ai/injected` annotation. */
export interface InjectionRecord {
  binding: string;
  engine: EngineFamily;
  vehicle: 'file' | 'environment';
  domain: string;
  tenantInjected: boolean;
  launchProgram: string;
  launchArgsForwarded: boolean;
}

export const injectLabel = 'kvcache.gpustack.ai/inject';
export const clientConfigAnnotation = 'kvcache.gpustack.ai/client-config';
export const injectedAnnotation = 'kvcache.gpustack.ai/injected';

export const configVolumeName = 'gpustack-kvcache-config';
export const configMountPath = '/etc/gpustack/kvcache';
export const configFileName = 'mooncake.json';

/** How refusals spell an engine. */
export const engineDisplayNames: Record<EngineFamily, string> = {
  vllm: 'vLLM',
  'vllm-ascend': 'vLLM-Ascend',
  sglang: 'SGLang',
};

/** The entry point the injection expects per engine (KV-cache spec §6.4). */
export const engineEntryPoints: Record<EngineFamily, string> = {
  vllm: 'vllm',
  'vllm-ascend': 'vllm',
  sglang: 'python3 -m sglang.launch_server',
};

export function isVllmFamily(engine: EngineFamily): boolean {
  return engine !== 'sglang';
}
