// injectCache: attach one engine container to a shared cache. Used by the ModelDeployment renderer
// and the Pod injection webhook alike, so both write exactly the same keys.
import type { Container, EnvVar, Volume } from 'kubernetes-types/core/v1.js';
import { defaultEnv, overwriteEnv, replaceMount, replaceVolume } from './env.ts';
import {
  type CacheConnection,
  type EngineFamily,
  type EngineRole,
  engineEntryPoints,
  type InjectionRecord,
  injectedAnnotation,
  isVllmFamily,
  type LoadFailurePolicy,
} from './types.ts';
import { cacheShapeFlags, environmentVehicle, fileVehicle, type VehiclePlan } from './vehicles.ts';

export interface InjectInput {
  engine: EngineFamily;
  role?: EngineRole;
  container: Container;
  volumes: Volume[];
  annotations: Record<string, string>;
  connection: CacheConnection;
  dtypeOwned: boolean;
  /** vLLM only: what a failed or stalled load from the store does; `recompute` unless told. */
  loadFailurePolicy?: LoadFailurePolicy;
  /** 'args' appends to args (Pods); 'command' folds into command (ModelDeployment roles). */
  placement: 'args' | 'command';
  /** The recognised launch program; defaults to the engine's entry point, not forwarded. */
  launch?: { program: string; argsForwarded: boolean };
}

export interface InjectOutput {
  container: Container;
  volumes: Volume[];
  annotations: Record<string, string>;
  record: InjectionRecord;
}

// Metrics the operator reads to judge CacheAttached, and the master client's timeouts: 30 s by default,
// which a master that vanished without closing its connections (a killed leader Pod) costs in full, on
// every call of the engine's in flight, until it reconnects to the new master (decision 50). The user's
// own setting wins.
const metricDefaults: EnvVar[] = [
  { name: 'MC_TE_METRIC', value: '1' },
  { name: 'MC_STORE_CLIENT_METRIC_BANDWIDTH', value: '1' },
  { name: 'MC_RPC_TIMEOUT_MS', value: '5000' },
  { name: 'MC_RPC_CONNECT_TIMEOUT_MS', value: '2000' },
];

function vehicleFor(input: InjectInput): VehiclePlan {
  if (isVllmFamily(input.engine))
    return fileVehicle(input.engine, input.role, input.connection, input.loadFailurePolicy);
  const argv = [...(input.container.command ?? []), ...(input.container.args ?? [])];
  return environmentVehicle(input.connection, argv);
}

function placeFlags(container: Container, flags: string[], placement: InjectInput['placement']): Container {
  return placement === 'command'
    ? { ...container, command: [...(container.command ?? []), ...flags] }
    : { ...container, args: [...(container.args ?? []), ...flags] };
}

function injectionRecord(input: InjectInput, plan: VehiclePlan): InjectionRecord {
  return {
    binding: input.connection.binding,
    engine: input.engine,
    vehicle: plan.vehicle,
    domain: input.connection.domain.name,
    tenantInjected: input.connection.tenantInjected,
    launchProgram: input.launch?.program ?? engineEntryPoints[input.engine],
    launchArgsForwarded: input.launch?.argsForwarded ?? false,
  };
}

export function injectCache(input: InjectInput): InjectOutput {
  const plan = vehicleFor(input);
  const flags = [...plan.flags, ...cacheShapeFlags(input.engine, input.connection, input.dtypeOwned)];
  const env = defaultEnv(overwriteEnv(input.container.env ?? [], plan.env), metricDefaults);
  const mounts = plan.mounts.reduce(replaceMount, input.container.volumeMounts ?? []);
  const container = placeFlags({ ...input.container, env }, flags, input.placement);
  if (mounts.length) container.volumeMounts = mounts;
  const record = injectionRecord(input, plan);
  return {
    container,
    volumes: plan.volumes.reduce(replaceVolume, input.volumes),
    annotations: { ...input.annotations, ...plan.annotations, [injectedAnnotation]: JSON.stringify(record) },
    record,
  };
}
