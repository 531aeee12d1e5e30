// The cache a container is attached to and the record of an injection; the
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

/**
 * vLLM's kv_load_failure_policy: `recompute` computes what a failed or stalled load would have brought;
 * `fail` (vLLM's own default) answers the request with an error. See
 * docs/decisions/0028-degrade-never-fail.md.
 */
export type LoadFailurePolicy = 'recompute' | 'fail';
export const loadFailurePolicies: readonly LoadFailurePolicy[] = ['recompute', 'fail'];

/** The policy `annotations` ask for: `fail` only when they say so, `recompute` otherwise. */
export function loadFailurePolicyOf(annotations: Record<string, string> | undefined): LoadFailurePolicy {
  return annotations?.[loadFailurePolicyAnnotation] === 'fail' ? 'fail' : 'recompute';
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
/** `fail` on a ModelDeployment or an opted-in Pod: a failed load from the store fails the request, on purpose. */
export const loadFailurePolicyAnnotation = 'kvcache.gpustack.ai/kv-load-failure-policy';
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

/** The entry point the injection expects per engine, optionally behind transparent launchers (launch.ts). */
export const engineEntryPoints: Record<EngineFamily, string> = {
  vllm: 'vllm',
  'vllm-ascend': 'vllm',
  sglang: 'python3 -m sglang.launch_server',
};

export function isVllmFamily(engine: EngineFamily): boolean {
  return engine !== 'sglang';
}
