// The Pod injection contract (docs/on-your-cluster.md, "Your own engine Pods"): an opted-in Pod names
// its Binding and engine; every refusal names the fix; an accepted Pod gets exactly what ModelDeployment
// roles get.
// A Pod this webhook already injected (the apiserver calls it again after a later mutating webhook
// changed the Pod) is left as it is, once its injection proves to be what would be written now.
// Pure: the handler passes the Binding, pool and backend it found.
import { isDeepStrictEqual } from 'node:util';
import type { Container } from 'kubernetes-types/core/v1.js';
import { type InjectOutput, injectCache } from '../inject/inject.ts';
import { argsForwardedAnnotation, recogniseLaunch } from '../inject/launch.ts';
import { findOwnedKeyRefusals } from '../inject/owned-keys.ts';
import {
  clientConfigAnnotation,
  configMountPath,
  configVolumeName,
  injectedAnnotation,
  injectLabel,
  loadFailurePolicyOf,
} from '../inject/types.ts';
import type { JsonPatchOp } from '../kube/webhook-server.ts';
import { policyAnnotationRefusal } from './load-failure-policy-rules.ts';
import { stripInjection } from './pod-injection-strip.ts';
import {
  type AdmittedPod,
  ascendMismatch,
  bindingNameRefusal,
  connect,
  contractPrefix,
  engineOf,
  no,
  type PodInjectionContext,
  type PodVerdict,
  pickContainer,
  podAnnotations,
  userKeys,
} from './pod-injection-target.ts';

export {
  type AdmittedPod,
  ascendMismatch,
  bindingNameRefusal,
  type PodInjectionContext,
  type PodVerdict,
  podAnnotations,
} from './pod-injection-target.ts';

type Attached = { ok: true; index: number; out: InjectOutput } | { ok: false; message: string };

/** Every check of the contract on a Pod without the webhook's own keys, then the injection itself. */
function attachPod(pod: AdmittedPod, ctx: PodInjectionContext, injected?: number): Attached {
  const a = pod.metadata.annotations ?? {};
  const binding = a[podAnnotations.binding];
  if (!binding)
    return no(
      `metadata.annotations[${podAnnotations.binding}] is required: name a KVCachePoolBinding in this namespace`,
    );
  const nameRefusal = bindingNameRefusal(binding);
  if (nameRefusal) return no(nameRefusal);
  const { engine, refusal: engineRefusal } = engineOf(a);
  if (!engine) return no(engineRefusal!);
  const role = a[podAnnotations.role];
  if (role !== undefined && role !== 'Prefill' && role !== 'Decode') {
    return no(
      `metadata.annotations[${podAnnotations.role}]: "${role}" is not a role; use Prefill or Decode, or omit it for a plain server`,
    );
  }
  const policyRefusal = policyAnnotationRefusal(a, engine, 'the injection');
  if (policyRefusal) return no(policyRefusal);
  const { index, refusal: containerRefusal } =
    injected === undefined ? pickContainer(pod, a) : { index: injected, refusal: undefined };
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
    loadFailurePolicy: loadFailurePolicyOf(a),
    placement: 'args',
    launch: { program: launch.program, argsForwarded: forwarded },
  });
  return { ok: true, index, out };
}

function escapePointer(key: string): string {
  return key.replaceAll('~', '~0').replaceAll('/', '~1');
}

function patchOf(pod: AdmittedPod, index: number, out: InjectOutput): JsonPatchOp[] {
  const a = pod.metadata.annotations ?? {};
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
  return patch;
}

export function planPodInjection(pod: AdmittedPod, ctx: PodInjectionContext): PodVerdict {
  const a = pod.metadata.annotations ?? {};
  if (a[injectedAnnotation] !== undefined) return judgeInjected(pod, ctx);
  for (const key of Object.keys(a)) {
    if (!key.startsWith(contractPrefix)) continue;
    if (key === clientConfigAnnotation)
      return no(`metadata.annotations[${key}] is written by the injection webhook; remove it`);
    if (!userKeys.has(key))
      return no(
        `metadata.annotations[${key}] is not part of the injection contract (the domain comes from the Binding); remove it`,
      );
  }
  const attached = attachPod(pod, ctx);
  return attached.ok ? { ok: true, patch: patchOf(pod, attached.index, attached.out) } : attached;
}

const alteredFix =
  'the injection webhook writes it, and this Pod does not carry what it writes: remove it (and the keys it added) and let the webhook inject the Pod';

/**
 * A Pod carrying the injection record: the webhook's own earlier work (a re-invocation, or a Pod copied
 * from an injected one). It is admitted unchanged only when taking the injection off and injecting again
 * gives back exactly this Pod; anything else is refused, so a Pod is never injected twice.
 */
function judgeInjected(pod: AdmittedPod, ctx: PodInjectionContext): PodVerdict {
  const a = pod.metadata.annotations ?? {};
  const refuse = (why: string) => no(`metadata.annotations[${injectedAnnotation}]: ${why}; ${alteredFix}`);
  for (const key of Object.keys(a)) {
    if (
      key.startsWith(contractPrefix) &&
      !userKeys.has(key) &&
      key !== clientConfigAnnotation &&
      key !== injectedAnnotation
    )
      return no(
        `metadata.annotations[${key}] is not part of the injection contract (the domain comes from the Binding); remove it`,
      );
  }
  const stripped = stripInjection(pod, ctx);
  if (!stripped.ok) return refuse(stripped.why);
  const again = attachPod(stripped.pod, ctx, stripped.index);
  if (!again.ok) return again;
  const now = pod.spec.containers[again.index]!;
  const redone: Container = again.out.container;
  const flags = (redone.args ?? []).slice(stripped.argsBefore.length);
  if (!isDeepStrictEqual(flags, stripped.flags))
    return refuse('the injected flags differ from the Binding’s');
  const envNames = new Set((now.env ?? []).map((e) => e.name));
  if ((redone.env ?? []).some((e) => !envNames.has(e.name)))
    return refuse('an injected environment variable is missing');
  if (a[clientConfigAnnotation] !== again.out.annotations[clientConfigAnnotation])
    return refuse(`${clientConfigAnnotation} differs from what the Binding gives`);
  let record: unknown;
  try {
    record = JSON.parse(a[injectedAnnotation]!);
  } catch {
    return refuse('it is not the JSON record the webhook writes');
  }
  if (!isDeepStrictEqual(record, again.out.record)) return refuse('the record differs from the Binding’s');
  return { ok: true, patch: [] };
}

/** The opt-in label and the two written annotations are fixed once a Pod exists. */
export function frozenKeyRefusal(old: AdmittedPod, pod: AdmittedPod): string | undefined {
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
