// Takes the injection back off a Pod the webhook already injected, checking each piece it finds against
// what the Binding gives now: the flag run in args, the engine's env entries, the config volume and mount,
// and the two written annotations. Pure.
import { isDeepStrictEqual } from 'node:util';
import type { Container } from 'kubernetes-types/core/v1.js';
import {
  type CacheConnection,
  clientConfigAnnotation,
  type EngineFamily,
  type EngineRole,
  injectedAnnotation,
  isVllmFamily,
  type LoadFailurePolicy,
  loadFailurePolicyOf,
} from '../inject/types.ts';
import { cacheShapeFlags, environmentVehicle, fileVehicle, type VehiclePlan } from '../inject/vehicles.ts';
import {
  type AdmittedPod,
  connect,
  engineOf,
  type PodInjectionContext,
  pickContainer,
  podAnnotations,
} from './pod-injection-target.ts';

export type Stripped =
  | { ok: true; pod: AdmittedPod; index: number; argsBefore: string[]; flags: string[] }
  | { ok: false; why: string };

/** The index of the last occurrence of `run` in `list`, or -1. */
function lastRun(list: readonly string[], run: readonly string[]): number {
  for (let i = list.length - run.length; i >= 0; i--) {
    if (run.every((x, k) => list[i + k] === x)) return i;
  }
  return -1;
}

/** The flag runs the injection may have appended, longest first. */
function candidateRuns(engine: EngineFamily, plan: VehiclePlan, shape: string[]): string[][] {
  const runs = [[...plan.flags, ...shape]];
  if (!isVllmFamily(engine))
    runs.push([...plan.flags.filter((f) => f !== '--enable-hierarchical-cache'), ...shape]);
  return runs;
}

function vehiclePlan(
  engine: EngineFamily,
  role: EngineRole | undefined,
  c: CacheConnection,
  policy: LoadFailurePolicy,
): VehiclePlan {
  // The environment vehicle's flags depend on the argv; its env, volumes and mounts do not.
  return isVllmFamily(engine) ? fileVehicle(engine, role, c, policy) : environmentVehicle(c, []);
}

/**
 * Whether `live` is `expected` as the apiserver stores it: fields it defaults (a volume's defaultMode, a
 * fieldRef's apiVersion) may be added, and an empty string may be dropped.
 */
export function storedAs(expected: unknown, live: unknown): boolean {
  if (Array.isArray(expected))
    return (
      Array.isArray(live) && live.length === expected.length && expected.every((x, i) => storedAs(x, live[i]))
    );
  if (typeof expected === 'object' && expected !== null) {
    if (typeof live !== 'object' || live === null || Array.isArray(live)) return false;
    const l = live as Record<string, unknown>;
    return Object.entries(expected).every(([k, v]) =>
      v === '' || v === undefined ? l[k] === '' || l[k] === undefined : storedAs(v, l[k]),
    );
  }
  return isDeepStrictEqual(expected, live);
}

export function stripInjection(pod: AdmittedPod, ctx: PodInjectionContext): Stripped {
  const a = pod.metadata.annotations ?? {};
  const { engine } = engineOf(a);
  const binding = a[podAnnotations.binding];
  const role = a[podAnnotations.role] as EngineRole | undefined;
  if (!engine || !binding)
    return { ok: false, why: 'the Pod no longer names the engine or Binding it was injected for' };
  const { connection, refusal } = connect(ctx, pod.metadata.namespace ?? 'default', binding);
  if (!connection) return { ok: false, why: refusal! };
  const plan = vehiclePlan(engine, role, connection, loadFailurePolicyOf(a));
  const runs = candidateRuns(engine, plan, cacheShapeFlags(engine, connection, ctx.dtypeOwned));
  const found = (c: { args?: string[] }) => {
    for (const run of runs) {
      const at = lastRun(c.args ?? [], run);
      if (at >= 0) return { at, flags: run };
    }
    return undefined;
  };
  // A sidecar added after the injection makes a second container: the injected one is the engine's.
  const named = a[podAnnotations.container] !== undefined || pod.spec.containers.length === 1;
  const carrying = pod.spec.containers.flatMap((c, i) => (found(c) ? [i] : []));
  const index = named ? pickContainer(pod, a).index : carrying.length === 1 ? carrying[0] : undefined;
  if (index === undefined)
    return {
      ok: false,
      why: 'the Pod no longer shows which container was injected; name it with kvcache.gpustack.ai/container',
    };
  const container = pod.spec.containers[index]!;
  const run = found(container);
  if (!run) return { ok: false, why: 'the injected flags are not in the container’s args' };
  const { at, flags } = run;
  const args = container.args ?? [];
  let env = container.env ?? [];
  for (const entry of plan.env) {
    const found = env.filter((e) => e.name === entry.name);
    if (found.length !== 1 || !storedAs(entry, found[0]))
      return { ok: false, why: `the container’s env ${entry.name} is not the injected one` };
    env = env.filter((e) => e.name !== entry.name);
  }
  let mounts = container.volumeMounts ?? [];
  for (const mount of plan.mounts) {
    if (!mounts.some((m) => storedAs(mount, m)))
      return { ok: false, why: `the mount of ${mount.name} is not the injected one` };
    mounts = mounts.filter((m) => !storedAs(mount, m));
  }
  let volumes = pod.spec.volumes ?? [];
  for (const volume of plan.volumes) {
    if (!volumes.some((v) => storedAs(volume, v)))
      return { ok: false, why: `the volume ${volume.name} is not the injected one` };
    volumes = volumes.filter((v) => !storedAs(volume, v));
  }
  const argsBefore = [...args.slice(0, at), ...args.slice(at + flags.length)];
  const before: Container = { ...container, args: argsBefore, env, volumeMounts: mounts };
  for (const key of ['args', 'env', 'volumeMounts'] as const) if (!before[key]?.length) delete before[key];
  const { [clientConfigAnnotation]: _config, [injectedAnnotation]: _record, ...annotations } = a;
  const containers = pod.spec.containers.map((c, i) => (i === index ? before : c));
  const spec = { ...pod.spec, containers };
  if (volumes.length) spec.volumes = volumes;
  else delete spec.volumes;
  return { ok: true, pod: { metadata: { ...pod.metadata, annotations }, spec }, index, argsBefore, flags };
}
