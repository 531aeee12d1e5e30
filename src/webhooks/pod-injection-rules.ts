// The Pod injection contract (KV-cache spec §3.5, §6.1, §6.4): an opted-in Pod names its Binding and
// engine; every refusal names the fix; an accepted Pod gets exactly what ModelDeployment roles get.
// Pure: the handler passes the Binding, pool and backend it found.
import type { KVCacheBackend, KVCachePool, KVCachePoolBinding } from '../api/types.ts';
import { effectiveProtocol, storeProtocol } from '../controllers/backend/effective-spec.ts';
import { domainOf } from '../controllers/pool/plan.ts';
import { injectCache } from '../inject/inject.ts';
import { argsForwardedAnnotation, recogniseLaunch } from '../inject/launch.ts';
import { findOwnedKeyRefusals } from '../inject/owned-keys.ts';
import {
  type CacheConnection,
  type Container,
  clientConfigAnnotation,
  configMountPath,
  configVolumeName,
  type EngineFamily,
  injectedAnnotation,
  injectLabel,
  type Volume,
} from '../inject/types.ts';
import type { JsonPatchOp } from '../kube/webhook-server.ts';

const prefix = 'kvcache.gpustack.ai/';
export const podAnnotations = {
  binding: `${prefix}binding`,
  engine: `${prefix}engine`,
  manufacturer: `${prefix}manufacturer`,
  role: `${prefix}role`,
  container: `${prefix}container`,
} as const;
const userKeys = new Set<string>([...Object.values(podAnnotations), argsForwardedAnnotation]);

export interface PodLike {
  metadata: {
    name?: string;
    generateName?: string;
    namespace?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
  };
  spec: { containers: Container[]; initContainers?: Container[]; volumes?: Volume[] };
}

export interface PodInjectionContext {
  binding?: KVCachePoolBinding;
  pool?: KVCachePool;
  backend?: KVCacheBackend;
  dtypeOwned: boolean;
}

export type PodVerdict = { ok: true; patch: JsonPatchOp[] } | { ok: false; message: string };

const no = (message: string): PodVerdict => ({ ok: false, message });

function engineOf(a: Record<string, string>): { engine?: EngineFamily; refusal?: string } {
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

function pickContainer(pod: PodLike, a: Record<string, string>): { index?: number; refusal?: string } {
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
function connect(
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
  const ledger = ctx.pool.status?.conditions?.find((c) => c.type === 'QuotaLedgerAvailable');
  if (
    !ledger ||
    ledger.status === 'Unknown' ||
    (ledger.status === 'False' && ledger.reason !== 'MultiTenancyDisabled')
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

function escapePointer(key: string): string {
  return key.replaceAll('~', '~0').replaceAll('/', '~1');
}

export function planPodInjection(pod: PodLike, ctx: PodInjectionContext): PodVerdict {
  const a = pod.metadata.annotations ?? {};
  for (const key of Object.keys(a)) {
    if (!key.startsWith(prefix)) continue;
    if (key === clientConfigAnnotation || key === injectedAnnotation)
      return no(`metadata.annotations[${key}] is written by the injection webhook; remove it`);
    if (!userKeys.has(key))
      return no(
        `metadata.annotations[${key}] is not part of the injection contract (the domain comes from the Binding); remove it`,
      );
  }
  const binding = a[podAnnotations.binding];
  if (!binding)
    return no(
      `metadata.annotations[${podAnnotations.binding}] is required: name a KVCachePoolBinding in this namespace`,
    );
  if (binding.includes('/'))
    return no(
      `metadata.annotations[${podAnnotations.binding}]: "${binding}" must be a Binding name in the Pod's own namespace, without a namespace part`,
    );
  const { engine, refusal: engineRefusal } = engineOf(a);
  if (!engine) return no(engineRefusal!);
  const role = a[podAnnotations.role];
  if (role !== undefined && role !== 'Prefill' && role !== 'Decode') {
    return no(
      `metadata.annotations[${podAnnotations.role}]: "${role}" is not a role; use Prefill or Decode, or omit it for a plain server`,
    );
  }
  const { index, refusal: containerRefusal } = pickContainer(pod, a);
  if (index === undefined) return no(containerRefusal!);
  const container = pod.spec.containers[index]!;
  const field = `spec.containers[${index}]`;
  const forwarded = a[argsForwardedAnnotation] === 'true';
  const launch = recogniseLaunch(engine, container, { argsForwarded: forwarded, field });
  if (!launch.ok) return no(launch.message);
  const scope = { kvCache: true, dtypeOwned: ctx.dtypeOwned, field, scope: 'pod' } as const;
  const owned = [
    ...findOwnedKeyRefusals(engine, container.args ?? [], container.env ?? [], {
      ...scope,
      argsField: 'args',
    }),
    ...findOwnedKeyRefusals(engine, container.command ?? [], [], {
      ...scope,
      argsField: 'command',
      firstFlag: 1,
    }),
  ];
  if (owned.length) return no(owned.join('; '));
  if (
    pod.spec.volumes?.some((v) => v.name === configVolumeName) ||
    container.volumeMounts?.some((m) => m.mountPath === configMountPath)
  ) {
    return no(
      `${field}: the volume ${configVolumeName} and the mount path ${configMountPath} belong to the injection; rename yours`,
    );
  }
  const { connection, refusal } = connect(ctx, pod.metadata.namespace ?? 'default', binding);
  if (!connection) return no(refusal!);
  const ascend = ascendMismatch(engine, connection.protocol);
  if (ascend) return no(ascend);
  const out = injectCache({
    engine,
    role: role as 'Prefill' | 'Decode' | undefined,
    container,
    volumes: pod.spec.volumes ?? [],
    annotations: a,
    connection,
    dtypeOwned: ctx.dtypeOwned,
    placement: 'args',
    launch: { program: launch.program, argsForwarded: forwarded },
  });
  const patch: JsonPatchOp[] = [{ op: 'replace', path: `/spec/containers/${index}`, value: out.container }];
  if (out.volumes.length)
    patch.push({ op: pod.spec.volumes ? 'replace' : 'add', path: '/spec/volumes', value: out.volumes });
  const annotationsOut = { ...out.annotations, [injectedAnnotation]: JSON.stringify(out.record) };
  if (!pod.metadata.annotations)
    patch.push({ op: 'add', path: '/metadata/annotations', value: annotationsOut });
  else {
    for (const [k, v] of Object.entries(annotationsOut)) {
      if (a[k] !== v)
        patch.push({
          op: a[k] === undefined ? 'add' : 'replace',
          path: `/metadata/annotations/${escapePointer(k)}`,
          value: v,
        });
    }
  }
  return { ok: true, patch };
}

/** The opt-in label and the two written annotations are fixed once a Pod exists. */
export function frozenKeyRefusal(old: PodLike, pod: PodLike): string | undefined {
  if (old.metadata.labels?.[injectLabel] !== pod.metadata.labels?.[injectLabel]) {
    return `metadata.labels[${injectLabel}] is fixed once the Pod exists; to stop injecting, change the Pod template (inject: "false" or no label)`;
  }
  for (const key of [injectedAnnotation, clientConfigAnnotation]) {
    if (old.metadata.annotations?.[key] !== pod.metadata.annotations?.[key]) {
      return `metadata.annotations[${key}] is written by the injection webhook at creation and cannot be edited or removed`;
    }
  }
  return undefined;
}
