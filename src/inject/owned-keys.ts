// Flags and env names the operator renders per engine, and the admission check that refuses them in
// a role's extraArgs/env in every spelling the engine parses.
import { flagKey } from './argv.ts';
import { loadFailurePolicySetBy, policyArgRefusal } from './load-failure-policy.ts';
import { tenantEnvName } from './tenant-naming.ts';
import { type EngineFamily, engineDisplayNames, isVllmFamily } from './types.ts';

/** Why a key is owned, which decides the way out a refusal names. */
type Ownership = 'connector' | 'dtype' | 'blockSize' | 'configFile';

interface OwnedFlag {
  flag: string;
  ownership: Ownership;
}

export interface OwnedKeyOptions {
  kvCache: boolean;
  dtypeOwned: boolean;
  /** The role's field path, e.g. spec.roles[0]. */
  field: string;
  /** The list the args came from, under `field`; extraArgs unless told. */
  argsField?: string;
  /** Entries before this index are not flags (a command's program); 0 unless told. */
  firstFlag?: number;
  /**
   * A ModelDeployment role (every key the operator renders), or an opted-in Pod, where only the keys
   * the injection itself writes are refused: the rest of the Mooncake env is overwritten in place.
   */
  scope?: 'role' | 'pod';
}

// The tenant is refused on both engines: it is the Binding's domain, never the Pod's to choose.
const podOwned = {
  vllm: { flags: ['--kv-transfer-config'], env: ['MOONCAKE_CONFIG_PATH', tenantEnvName] },
  sglang: {
    flags: ['--hicache-storage-backend', '--hicache-storage-backend-extra-config'],
    env: ['SGLANG_HICACHE_MOONCAKE_CONFIG_PATH', tenantEnvName],
  },
};

const vllmConnectorFlags = ['--kv-transfer-config', '--kv-events-config'];
const vllmEnv = ['MOONCAKE_CONFIG_PATH', 'VLLM_MOONCAKE_BOOTSTRAP_PORT', tenantEnvName];
const sglangConnectorFlags = [
  '--hicache-storage-backend',
  '--hicache-storage-backend-extra-config',
  '--disaggregation-mode',
  '--disaggregation-transfer-backend',
  '--disaggregation-bootstrap-port',
];
const sglangEnv = [
  'SGLANG_HICACHE_MOONCAKE_CONFIG_PATH',
  'MOONCAKE_MASTER',
  'MOONCAKE_TE_META_DATA_SERVER',
  'MOONCAKE_PROTOCOL',
  'MOONCAKE_DEVICE',
  'MOONCAKE_GLOBAL_SEGMENT_SIZE',
  'MOONCAKE_LOCAL_HOSTNAME',
  tenantEnvName,
];

// Flags near the owned ones, so an abbreviation is refused only when the engine would expand it to ours.
const vllmKnownFlags = [
  '--config',
  '--config-format',
  '--kv-cache-dtype',
  '--kv-cache-memory-bytes',
  '--kv-cache-metrics',
  '--kv-cache-metrics-sample',
  '--kv-events-config',
  '--kv-load-failure-policy',
  '--kv-offloading-backend',
  '--kv-offloading-size',
  '--kv-sharing-fast-prefill',
  '--kv-transfer-config',
  '--block-size',
  '--max-model-len',
  '--max-num-seqs',
  '--max-num-batched-tokens',
  '--model',
  '--served-model-name',
  '--host',
  '--port',
  '--tensor-parallel-size',
  '--pipeline-parallel-size',
  '--data-parallel-size',
  '--gpu-memory-utilization',
  '--enable-prefix-caching',
  '--dtype',
  '--quantization',
  '--trust-remote-code',
  '--enforce-eager',
  '--revision',
  '--download-dir',
];
const sglangKnownFlags = [
  '--config',
  '--hicache-ratio',
  '--hicache-size',
  '--hicache-write-policy',
  '--hicache-io-backend',
  '--hicache-mem-layout',
  '--hicache-storage-prefetch-policy',
  '--hicache-storage-backend',
  '--hicache-storage-backend-extra-config',
  '--disaggregation-mode',
  '--disaggregation-transfer-backend',
  '--disaggregation-bootstrap-port',
  '--disaggregation-decode-tp',
  '--disaggregation-decode-dp',
  '--disaggregation-prefill-pp',
  '--disaggregation-ib-device',
  '--disaggregation-decode-enable-offload-kvcache',
  '--disaggregation-decode-polling-interval',
  '--enable-hierarchical-cache',
  '--kv-cache-dtype',
  '--page-size',
  '--model-path',
  '--served-model-name',
  '--host',
  '--port',
  '--tp-size',
  '--dp-size',
  '--pp-size',
  '--mem-fraction-static',
  '--context-length',
  '--max-running-requests',
  '--chunked-prefill-size',
  '--trust-remote-code',
  '--dtype',
  '--quantization',
];

/** The flags the operator owns on `engine` under `opts`. */
function ownedFlags(engine: EngineFamily, opts: Pick<OwnedKeyOptions, 'kvCache' | 'dtypeOwned' | 'scope'>) {
  const vllm = isVllmFamily(engine);
  const connector =
    opts.scope === 'pod'
      ? podOwned[vllm ? 'vllm' : 'sglang'].flags
      : vllm
        ? vllmConnectorFlags
        : sglangConnectorFlags;
  const flags: OwnedFlag[] = connector.map((flag) => ({ flag, ownership: 'connector' }));
  // Both engines read more arguments from a --config file, where any owned flag could hide.
  flags.push({ flag: '--config', ownership: 'configFile' });
  if (opts.kvCache && opts.dtypeOwned) flags.push({ flag: '--kv-cache-dtype', ownership: 'dtype' });
  if (opts.kvCache) flags.push({ flag: vllm ? '--block-size' : '--page-size', ownership: 'blockSize' });
  return flags;
}

/** The env names the operator owns on `engine`. */
function ownedEnvNames(engine: EngineFamily, scope: OwnedKeyOptions['scope'] = 'role'): readonly string[] {
  if (scope === 'pod') return podOwned[isVllmFamily(engine) ? 'vllm' : 'sglang'].env;
  return isVllmFamily(engine) ? vllmEnv : sglangEnv;
}

/** The owned flag `key` resolves to: exactly, or as the only known flag it abbreviates. */
function resolveOwned(engine: EngineFamily, key: string, owned: OwnedFlag[]): OwnedFlag | undefined {
  const exact = owned.find((o) => o.flag === key);
  const known = isVllmFamily(engine) ? vllmKnownFlags : sglangKnownFlags;
  const all = new Set([...known, ...owned.map((o) => o.flag)]);
  if (exact || all.has(key)) return exact;
  const expansions = [...all].filter((flag) => flag.startsWith(key));
  return expansions.length === 1 ? owned.find((o) => o.flag === expansions[0]) : undefined;
}

function wayOut(ownership: Ownership, flag: string, scope: OwnedKeyOptions['scope']): string {
  if (ownership === 'configFile') {
    const where = scope === 'pod' ? "the container's args" : 'extraArgs';
    return `${flag} reads further arguments from a file, where a flag the operator owns could hide; pass those arguments in ${where} instead`;
  }
  if (scope === 'pod') {
    if (ownership === 'dtype')
      return `${flag} is injected from the KVCachePoolBinding's spec.domain.dtype; remove it and name a Binding whose domain.dtype is the dtype you want`;
    if (ownership === 'blockSize')
      return `${flag} is injected from the KVCachePoolBinding's spec.domain.blockSize; remove it and name a Binding whose domain.blockSize is the size you want`;
    return 'the injection writes it from the Binding; remove it, or drop the kvcache.gpustack.ai/inject label to configure the cache yourself';
  }
  const takeOver =
    'take over the whole argv with roles[].command (the operator then renders no cache configuration for that role)';
  if (ownership === 'dtype')
    return `${flag} is rendered from the KVCachePoolBinding's spec.domain.dtype while spec.kvCache is set; remove it and reference a Binding whose domain.dtype is the dtype you want, or ${takeOver}`;
  if (ownership === 'blockSize')
    return `${flag} is rendered from the KVCachePoolBinding's spec.domain.blockSize while spec.kvCache is set, so every replica in the domain cuts blocks of one size; remove it and reference a Binding whose domain.blockSize is the size you want, or ${takeOver}`;
  return `the operator renders it from spec.kvCache; remove it, or ${takeOver}`;
}

function argRefusal(
  engine: EngineFamily,
  path: string,
  arg: string,
  owned: OwnedFlag,
  scope: OwnedKeyOptions['scope'],
): string {
  const spelled = arg.split('=', 1)[0]!;
  const as = spelled === owned.flag ? owned.flag : `${spelled} (read by the engine as ${owned.flag})`;
  return `${path}: ${as} is owned by the operator on ${engineDisplayNames[engine]}: ${wayOut(owned.ownership, owned.flag, scope)}`;
}

function envRefusal(
  engine: EngineFamily,
  path: string,
  name: string,
  scope: OwnedKeyOptions['scope'],
): string {
  if (scope === 'pod' && name === tenantEnvName) {
    return `${path}: env ${name} names the store tenant, which is the Binding's domain and which the injection writes (vLLM: tenant_id in the client config; SGLang: this variable), so another value could read another team's cache; remove it`;
  }
  if (scope === 'pod') {
    return `${path}: env ${name} is written by the injection on ${engineDisplayNames[engine]}; remove it, or drop the kvcache.gpustack.ai/inject label to configure the cache yourself`;
  }
  const owned = `${path}: env ${name} is owned by the operator on ${engineDisplayNames[engine]}`;
  if (name === tenantEnvName)
    return `${owned} (it selects the store tenant, which is the Binding's domain, so another value could read another team's cache); remove it: the operator writes the tenant from the Binding's spec.domain.name`;
  return `${owned} (it carries the cache connection the operator renders from spec.kvCache); remove it, or take over the whole argv with roles[].command (the operator then renders no cache configuration for that role)`;
}

/** One message per owned key found in `args` or `env`, each naming key, engine, field and way out. */
export function findOwnedKeyRefusals(
  engine: EngineFamily,
  args: readonly string[],
  env: readonly { name: string }[],
  opts: OwnedKeyOptions,
): string[] {
  const owned = ownedFlags(engine, opts);
  const argsField = opts.argsField ?? 'extraArgs';
  const refusals: string[] = [];
  args.forEach((arg, i) => {
    if (i < (opts.firstFlag ?? 0)) return;
    const key = flagKey(engine, arg);
    const hit = key === undefined ? undefined : resolveOwned(engine, key, owned);
    const path = `${opts.field}.${argsField}[${i}]`;
    const policy = hit?.flag === '--kv-transfer-config' ? loadFailurePolicySetBy(engine, args, i) : undefined;
    if (policy) refusals.push(policyArgRefusal(engine, path, arg, policy.value, opts.scope ?? 'role'));
    else if (hit) refusals.push(argRefusal(engine, path, arg, hit, opts.scope));
  });
  const ownedEnv = new Set(ownedEnvNames(engine, opts.scope));
  env.forEach((entry, i) => {
    if (ownedEnv.has(entry.name))
      refusals.push(envRefusal(engine, `${opts.field}.env[${i}]`, entry.name, opts.scope));
  });
  return refusals;
}
