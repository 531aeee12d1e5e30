// The engine container of one role before any cache is attached: image, argv, env, ports, probes and
// resources (docs/decisions/0008-modeldeployment-workloads.md).

import type { Container, ContainerPort, EnvVar, VolumeMount } from 'kubernetes-types/core/v1.js';
import type { ModelDeploymentRole } from '../../api/model-deployment.ts';
import type { InstanceType, ModelDeployment } from '../../api/types.ts';
import { flagValue, hasFlag } from '../../inject/argv.ts';
import { defaultEnv } from '../../inject/env.ts';
import type { EngineFamily } from '../../inject/types.ts';
import { defaultServingPort, engineFamily, isTakeOver, servingPort } from '../../vocabulary/engine-roles.ts';
import { engineImage } from '../../vocabulary/runner-image.ts';
import { roleResources } from './render-resources.ts';

export const engineContainerName = 'engine';

/** The operator's argv: entry point, model, served name, and host/port unless extraArgs set them. */
export function operatorArgv(md: ModelDeployment, role: ModelDeploymentRole, engine: EngineFamily): string[] {
  const model = md.spec.model.name;
  const extra = role.extraArgs ?? [];
  const entry =
    engine === 'sglang'
      ? ['python3', '-m', 'sglang.launch_server', '--model-path', model]
      : ['vllm', 'serve', model];
  const unless = (flag: string, value: string) => (hasFlag(engine, extra, flag) ? [] : [flag, value]);
  return [
    ...entry,
    ...unless('--served-model-name', model),
    // SGLang otherwise binds 127.0.0.1:30000, out of the Service's reach.
    ...unless('--host', '0.0.0.0'),
    ...unless('--port', String(servingPort(role))),
  ];
}

/** HTTP or HTTPS for the health probes, or undefined when the kubelet could not reach /health. */
function probeScheme(role: ModelDeploymentRole, engine: EngineFamily): 'HTTP' | 'HTTPS' | undefined {
  const extra = role.extraArgs ?? [];
  if ((role.ports?.[0]?.protocol ?? 'TCP') !== 'TCP') return undefined;
  // A user-chosen host may be loopback; a port is admitted only when it equals the role's port.
  if (hasFlag(engine, extra, '--host')) return undefined;
  const tls = hasFlag(engine, extra, '--ssl-certfile') || hasFlag(engine, extra, '--ssl-keyfile');
  if (!tls) return 'HTTP';
  const certReqs = flagValue(engine, extra, '--ssl-cert-reqs');
  // Required client certificates are something the kubelet cannot present.
  return certReqs === undefined || certReqs === '0' || certReqs === '1' ? 'HTTPS' : undefined;
}

function healthProbes(
  role: ModelDeploymentRole,
  engine: EngineFamily,
): Pick<Container, 'startupProbe' | 'readinessProbe' | 'livenessProbe'> {
  const scheme = probeScheme(role, engine);
  if (!scheme) return {};
  const httpGet = { path: '/health', port: servingPort(role), scheme };
  return {
    // Loading weights can take a long while: 30 minutes before the first /health answer.
    startupProbe: { httpGet, periodSeconds: 10, failureThreshold: 180 },
    readinessProbe: { httpGet, periodSeconds: 5 },
    livenessProbe: { httpGet, periodSeconds: 10, failureThreshold: 6 },
  };
}

function containerPorts(role: ModelDeploymentRole): ContainerPort[] {
  const ports = role.ports?.length ? role.ports : [{ port: defaultServingPort }];
  return ports.map((p, i) => ({
    name: i === 0 ? 'http' : `port-${i}`,
    containerPort: p.port,
    protocol: p.protocol ?? 'TCP',
  }));
}

/** The parts of the engine container the cache injection edits. */
export interface EngineDraft {
  command: string[];
  /** extraArgs, kept apart until the injection has placed its flags before them. */
  args: string[];
  env: EnvVar[];
  volumeMounts: VolumeMount[];
}

/** The draft of a role's engine argv and env: verbatim for a take-over, the operator's otherwise. */
export function engineDraft(
  md: ModelDeployment,
  role: ModelDeploymentRole,
  engine: EngineFamily,
): EngineDraft {
  const env = (role.env ?? []).map((e) => ({ ...e }));
  if (isTakeOver(role)) return { command: [...role.command!], args: [], env, volumeMounts: [] };
  return {
    command: operatorArgv(md, role, engine),
    args: [...(role.extraArgs ?? [])],
    env: defaultEnv(env, [{ name: 'MC_TE_METRIC', value: '1' }]),
    volumeMounts: [],
  };
}

/** The finished container: the draft's argv folded into command, with image, ports, resources and probes. */
export function engineContainer(
  md: ModelDeployment,
  role: ModelDeploymentRole,
  type: InstanceType,
  draft: EngineDraft,
  overcommit: boolean,
  runtimeVersion?: string,
): Container {
  const engine = engineFamily(md, type);
  return {
    name: engineContainerName,
    image: engineImage(md, role, type, runtimeVersion),
    ...(role.imagePullPolicy ? { imagePullPolicy: role.imagePullPolicy } : {}),
    command: [...draft.command, ...draft.args],
    ...(draft.env.length ? { env: draft.env } : {}),
    ports: containerPorts(role),
    resources: roleResources(role, type, overcommit),
    ...(isTakeOver(role) ? {} : healthProbes(role, engine)),
    ...(draft.volumeMounts.length ? { volumeMounts: draft.volumeMounts } : {}),
    ...(role.privileged ? { securityContext: { privileged: true } } : {}),
  };
}
