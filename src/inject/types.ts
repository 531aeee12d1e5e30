// The cache a container is attached to and the record of an injection (KV-cache spec §6); the
// containers, env, volumes and mounts it edits are kubernetes-types' core/v1 kinds.

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
