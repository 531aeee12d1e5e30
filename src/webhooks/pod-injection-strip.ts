// Takes the injection back off a Pod the webhook already injected, checking each piece it finds against
// what the Binding gives now: the flag run in args, the engine's env entries, the config volume and mount,
// and the two written annotations. Pure.
import { isDeepStrictEqual } from 'node:util';
import {
  type CacheConnection,
  type Container,
  clientConfigAnnotation,
  type EngineFamily,
  type EngineRole,
  injectedAnnotation,
  isVllmFamily,
} from '../inject/types.ts';
import { cacheShapeFlags, environmentVehicle, fileVehicle, type VehiclePlan } from '../inject/vehicles.ts';
import {
  connect,
  engineOf,
  type PodInjectionContext,
  type PodLike,
  pickContainer,
  podAnnotations,
} from './pod-injection-target.ts';

export type Stripped =
  | { ok: true; pod: PodLike; argsBefore: string[]; flags: string[] }
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

function vehiclePlan(engine: EngineFamily, role: EngineRole | undefined, c: CacheConnection): VehiclePlan {
  // The environment vehicle's flags depend on the argv; its env, volumes and mounts do not.
  return isVllmFamily(engine) ? fileVehicle(engine, role, c) : environmentVehicle(c, []);
}

const emptyToUndefined = <T>(list: T[]): T[] | undefined => (list.length ? list : undefined);

export function stripInjection(pod: PodLike, ctx: PodInjectionContext): Stripped {
  const a = pod.metadata.annotations ?? {};
  const { engine } = engineOf(a);
  const { index } = pickContainer(pod, a);
  const binding = a[podAnnotations.binding];
  const role = a[podAnnotations.role] as EngineRole | undefined;
  if (!engine || index === undefined || !binding)
    return { ok: false, why: 'the Pod no longer names the engine, container or Binding it was injected for' };
  const { connection, refusal } = connect(ctx, pod.metadata.namespace ?? 'default', binding);
  if (!connection) return { ok: false, why: refusal! };
  const plan = vehiclePlan(engine, role, connection);
  const container = pod.spec.containers[index]!;
  const args = container.args ?? [];
  let at = -1;
  let flags: string[] = [];
  for (const run of candidateRuns(engine, plan, cacheShapeFlags(engine, connection, ctx.dtypeOwned))) {
    at = lastRun(args, run);
    if (at >= 0) {
      flags = run;
      break;
    }
  }
  if (at < 0) return { ok: false, why: 'the injected flags are not in the container’s args' };
  let env = container.env ?? [];
  for (const entry of plan.env) {
    const found = env.filter((e) => e.name === entry.name);
    if (found.length !== 1 || !isDeepStrictEqual(found[0], entry))
      return { ok: false, why: `the container’s env ${entry.name} is not the injected one` };
    env = env.filter((e) => e.name !== entry.name);
  }
  let mounts = container.volumeMounts ?? [];
  for (const mount of plan.mounts) {
    if (!mounts.some((m) => isDeepStrictEqual(m, mount)))
      return { ok: false, why: `the mount of ${mount.name} is not the injected one` };
    mounts = mounts.filter((m) => !isDeepStrictEqual(m, mount));
  }
  let volumes = pod.spec.volumes ?? [];
  for (const volume of plan.volumes) {
    if (!volumes.some((v) => isDeepStrictEqual(v, volume)))
      return { ok: false, why: `the volume ${volume.name} is not the injected one` };
    volumes = volumes.filter((v) => !isDeepStrictEqual(v, volume));
  }
  const argsBefore = [...args.slice(0, at), ...args.slice(at + flags.length)];
  const before: Container = { ...container };
  for (const [key, list] of [
    ['args', argsBefore],
    ['env', env],
    ['volumeMounts', mounts],
  ] as const) {
    const value = emptyToUndefined<unknown>([...list]);
    if (value) before[key] = value as never;
    else delete before[key];
  }
  const { [clientConfigAnnotation]: _config, [injectedAnnotation]: _record, ...annotations } = a;
  const containers = pod.spec.containers.map((c, i) => (i === index ? before : c));
  const spec = { ...pod.spec, containers };
  if (volumes.length) spec.volumes = volumes;
  else delete spec.volumes;
  return { ok: true, pod: { metadata: { ...pod.metadata, annotations }, spec }, argsBefore, flags };
}
