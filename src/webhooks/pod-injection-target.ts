// What an opted-in Pod names (its annotations, docs/on-your-cluster.md): its engine, its engine
// container, and the cache its Binding resolves to, or why it cannot be attached. Pure: the handler
// passes the objects it found.
import type { Pod } from 'kubernetes-types/core/v1.js';
import { conditionOf } from '../api/conditions.ts';
import { PoolCondition, PoolReason } from '../api/kvcache-pool-conditions.ts';
import { dns1123Subdomain } from '../api/schema.ts';
import type { KVCacheBackend, KVCachePool, KVCachePoolBinding } from '../api/types.ts';
import { argsForwardedAnnotation } from '../inject/launch.ts';
import { type CacheConnection, type EngineFamily, loadFailurePolicyAnnotation } from '../inject/types.ts';
import type { JsonPatchOp } from '../kube/webhook-server.ts';
import { effectiveProtocol, storeProtocol } from '../vocabulary/backend-spec.ts';
import { domainOf } from '../vocabulary/domains.ts';

export const contractPrefix = 'kvcache.gpustack.ai/';
const prefix = contractPrefix;
export const podAnnotations = {
  binding: `${prefix}binding`,
  engine: `${prefix}engine`,
  manufacturer: `${prefix}manufacturer`,
  role: `${prefix}role`,
  container: `${prefix}container`,
} as const;
export const userKeys = new Set<string>([
  ...Object.values(podAnnotations),
  argsForwardedAnnotation,
  loadFailurePolicyAnnotation,
]);

const objectName = new RegExp(dns1123Subdomain);

/** Why the binding annotation's value cannot name a Binding in the Pod's namespace, or undefined. */
export function bindingNameRefusal(name: string): string | undefined {
  const at = `metadata.annotations[${podAnnotations.binding}]`;
  if (name.includes('/'))
    return `${at}: "${name}" must be a Binding name in the Pod's own namespace, without a namespace part`;
  if (name.length <= 253 && objectName.test(name)) return undefined;
  return `${at}: "${name}" is not an object name: a KVCachePoolBinding's name is a DNS-1123 subdomain (at most 253 lowercase letters, digits, '-' and '.', starting and ending with a letter or digit); write the name of a KVCachePoolBinding in the Pod's namespace, as kubectl get kvcachepoolbinding shows it`;
}

/** A Pod as admission is asked about it: its metadata and spec are always there. */
export type AdmittedPod = Pod & Required<Pick<Pod, 'metadata' | 'spec'>>;

export interface PodInjectionContext {
  binding?: KVCachePoolBinding;
  pool?: KVCachePool;
  backend?: KVCacheBackend;
  dtypeOwned: boolean;
}

export type PodVerdict = { ok: true; patch: JsonPatchOp[] } | { ok: false; message: string };

export const no = (message: string): { ok: false; message: string } => ({ ok: false, message });

export function engineOf(a: Record<string, string>): { engine?: EngineFamily; refusal?: string } {
  const engine = a[podAnnotations.engine];
  const maker = a[podAnnotations.manufacturer];
  if (engine === undefined)
    return {
      refusal: `metadata.annotations[${podAnnotations.engine}] is required: set it to vLLM or SGLang`,
    };
  if (maker !== undefined && maker !== 'ascend')
    return {
      refusal: `metadata.annotations[${podAnnotations.manufacturer}]: only "ascend" is known; remove it for other accelerators`,
    };
  if (/^vllm-ascend$/i.test(engine)) {
    return {
      refusal: `metadata.annotations[${podAnnotations.engine}]: write vLLM and set ${podAnnotations.manufacturer}: ascend for vLLM-Ascend`,
    };
  }
  if (/^vllm$/i.test(engine)) return { engine: maker === 'ascend' ? 'vllm-ascend' : 'vllm' };
  if (/^sglang$/i.test(engine)) {
    if (maker)
      return {
        refusal: `metadata.annotations[${podAnnotations.manufacturer}] applies to vLLM only; remove it for SGLang`,
      };
    return { engine: 'sglang' };
  }
  return {
    refusal: `metadata.annotations[${podAnnotations.engine}]: "${engine}" is not an engine this webhook configures; set vLLM or SGLang`,
  };
}

export function pickContainer(
  pod: AdmittedPod,
  a: Record<string, string>,
): { index?: number; refusal?: string } {
  const named = a[podAnnotations.container];
  if (named === undefined) {
    if (pod.spec.containers.length === 1) return { index: 0 };
    return {
      refusal: `metadata.annotations[${podAnnotations.container}] is required when a Pod has several containers: name the engine container`,
    };
  }
  const index = pod.spec.containers.findIndex((c) => c.name === named);
  if (index >= 0) return { index };
  const init = pod.spec.initContainers?.some((c) => c.name === named);
  return {
    refusal: `metadata.annotations[${podAnnotations.container}]: ${named} ${init ? 'is an init container; name an app container' : 'is not a container of this Pod'}`,
  };
}

/** The connection a Binding resolves to, or why the Pod cannot be attached. */
export function connect(
  ctx: PodInjectionContext,
  ns: string,
  name: string,
): { connection?: CacheConnection; refusal?: string } {
  const b = ctx.binding;
  if (!b)
    return {
      refusal: `KVCachePoolBinding ${name} does not exist in namespace ${ns}; ask an administrator for one, or fix ${podAnnotations.binding}`,
    };
  if (b.metadata.deletionTimestamp)
    return { refusal: `KVCachePoolBinding ${ns}/${name} is being deleted; use another Binding` };
  if (!ctx.pool)
    return { refusal: `KVCachePool ${b.spec.poolRef.name} of Binding ${ns}/${name} does not exist` };
  if (!ctx.backend) return { refusal: `the backend of pool ${ctx.pool.metadata.name} does not exist` };
  const ledger = conditionOf(ctx.pool, PoolCondition.QuotaLedgerAvailable);
  if (
    !ledger ||
    ledger.status === 'Unknown' ||
    (ledger.status === 'False' && ledger.reason !== PoolReason.MultiTenancyDisabled)
  ) {
    const why = ledger ? `${ledger.reason}: ${ledger.message}` : 'not reported yet';
    return {
      refusal: `pool ${ctx.pool.metadata.name} cannot say whether its master keeps a tenant ledger (QuotaLedgerAvailable ${why}); retry once the pool is Ready`,
    };
  }
  const endpoint = ctx.pool.status?.clientEndpoint;
  if (!endpoint)
    return {
      refusal: `pool ${ctx.pool.metadata.name} publishes no clientEndpoint yet; retry once its backend is Ready`,
    };
  const groups = ctx.backend.spec.connection.managed?.members ?? [];
  const protocols = [...new Set(groups.map((g) => storeProtocol(effectiveProtocol(ctx.backend!, g))))];
  if (protocols.length > 1) {
    return {
      refusal: `pool ${ctx.pool.metadata.name} is served on several transports (${protocols.join(', ')}) and the engine cannot pick one; use a Binding on a single-transport pool`,
    };
  }
  return {
    connection: {
      binding: name,
      pool: ctx.pool.metadata.name!,
      domain: { name: domainOf(b), blockSize: b.spec.domain.blockSize, dtype: b.spec.domain.dtype },
      masterAddress: endpoint,
      protocol: protocols[0] ?? storeProtocol(ctx.backend.spec.transport?.protocol ?? 'Auto'),
      tenantInjected: ledger.status === 'True',
    },
  };
}

/** vLLM-Ascend reaches the store only over Ascend's transport (API `CANN`, store spelling `ascend`). */
export function ascendMismatch(engine: EngineFamily, protocol: string): string | undefined {
  if (engine !== 'vllm-ascend' || protocol === 'ascend') return undefined;
  return `vLLM-Ascend needs the pool's store on the ascend transport, but it runs ${protocol}; use a pool whose backend sets transport.protocol: CANN`;
}
