// The ModelDeployment's children: one Deployment `<md>-<role>` per role, a Service `<md>` for the
// whole deployment and one `<md>-<role>` per role. Pure; see
// docs/decisions/0008-modeldeployment-workloads.md.

import type { Deployment } from 'kubernetes-types/apps/v1.js';
import type { PodTemplateSpec, Service, Volume, VolumeMount } from 'kubernetes-types/core/v1.js';
import type { ModelDeploymentRole } from '../../api/model-deployment.ts';
import type { InstanceType, ModelDeployment } from '../../api/types.ts';
import { injectCache } from '../../inject/inject.ts';
import { type CacheConnection, loadFailurePolicyOf } from '../../inject/types.ts';
import { sha256Hex } from '../../kube/canonical-json.ts';
import type { KubeObject } from '../../kube/object.ts';
import { baselineRefusals } from '../../vocabulary/engine-baseline.ts';
import { engineFamily, isTakeOver, servingPort } from '../../vocabulary/engine-roles.ts';
import { podPlacement } from '../../vocabulary/placement.ts';
import { type EngineDraft, engineContainer, engineContainerName, engineDraft } from './render-engine.ts';
import {
  childMetadata,
  deploymentName,
  deploymentSelector,
  roleKind,
  roleLabels,
  roleObjectName,
  templateHashAnnotation,
} from './render-labels.ts';

export interface ModelDeploymentRenderContext {
  instanceTypes: Map<string, InstanceType>;
  /** The cache the engines connect to; undefined renders no connector at all. */
  connection?: CacheConnection;
  dtypeOwned: boolean;
  overcommit: boolean;
  /** The lowest accelerator runtime version of each InstanceType's nodes (forms the default image). */
  runtimeVersions?: Map<string, string>;
}

export interface RenderedModelDeployment {
  deployments: KubeObject<Deployment>[];
  services: KubeObject<Service>[];
}

/** The port of the `<md>` Service, whatever port each role serves on (status.endpoint names it). */
export const servicePort = 8000;

function instanceTypeOf(role: ModelDeploymentRole, ctx: ModelDeploymentRenderContext): InstanceType {
  const type = ctx.instanceTypes.get(role.instanceType);
  if (!type)
    throw new Error(
      `role ${role.name}: InstanceType ${role.instanceType} does not exist; pick one from kubectl get instancetype`,
    );
  return type;
}

/** The role's own volumes: additionalVolumes (a volume plus optional mountPath/readOnly/subPath) and /dev/shm. */
function roleVolumes(role: ModelDeploymentRole): { volumes: Volume[]; mounts: VolumeMount[] } {
  const volumes: Volume[] = [];
  const mounts: VolumeMount[] = [];
  for (const entry of role.additionalVolumes ?? []) {
    const { mountPath, readOnly, subPath, ...volume } = entry;
    volumes.push(volume);
    if (typeof mountPath === 'string')
      mounts.push({
        name: volume.name,
        mountPath,
        ...(readOnly ? { readOnly } : {}),
        ...(subPath ? { subPath } : {}),
      });
  }
  if (role.shmSize !== undefined) {
    volumes.push({ name: 'dshm', emptyDir: { medium: 'Memory', sizeLimit: String(role.shmSize) } });
    mounts.push({ name: 'dshm', mountPath: '/dev/shm' });
  }
  return { volumes, mounts };
}

interface AttachedPod {
  draft: EngineDraft;
  volumes: Volume[];
  annotations: Record<string, string>;
}

/** The draft with the cache attached when the deployment has one resolved and the role is managed. */
function attachCache(
  md: ModelDeployment,
  role: ModelDeploymentRole,
  type: InstanceType,
  ctx: ModelDeploymentRenderContext,
): AttachedPod {
  const engine = engineFamily(md, type);
  const own = roleVolumes(role);
  const draft = { ...engineDraft(md, role, engine), volumeMounts: own.mounts };
  if (!md.spec.kvCache || !ctx.connection || isTakeOver(role))
    return { draft, volumes: own.volumes, annotations: {} };
  const kind = roleKind(role);
  const out = injectCache({
    engine,
    ...(kind === 'Server' ? {} : { role: kind }),
    container: { name: engineContainerName, ...draft },
    volumes: own.volumes,
    annotations: {},
    connection: ctx.connection,
    dtypeOwned: ctx.dtypeOwned,
    loadFailurePolicy: loadFailurePolicyOf(md.metadata.annotations),
    placement: 'command',
  });
  const c = out.container;
  return {
    draft: {
      command: c.command ?? [],
      args: c.args ?? [],
      env: c.env ?? [],
      volumeMounts: c.volumeMounts ?? [],
    },
    volumes: out.volumes,
    annotations: out.annotations,
  };
}

function podTemplate(
  md: ModelDeployment,
  role: ModelDeploymentRole,
  ctx: ModelDeploymentRenderContext,
): PodTemplateSpec {
  const type = instanceTypeOf(role, ctx);
  const pod = attachCache(md, role, type, ctx);
  const pullSecrets = role.imagePullSecrets;
  const spec = {
    ...podPlacement(role),
    terminationGracePeriodSeconds: role.terminationGracePeriodSeconds ?? 30,
    // Engines do not call the Kubernetes API: no token unless the role asks for one.
    automountServiceAccountToken: role.automountServiceAccountToken === true,
    ...(pullSecrets?.length ? { imagePullSecrets: pullSecrets.map((s) => ({ name: s.name })) } : {}),
    containers: [
      engineContainer(md, role, type, pod.draft, ctx.overcommit, ctx.runtimeVersions?.get(role.instanceType)),
    ],
    ...(pod.volumes.length ? { volumes: pod.volumes } : {}),
  };
  const labels = roleLabels(md, role);
  const hash = sha256Hex({ metadata: { labels, annotations: pod.annotations }, spec });
  return { metadata: { labels, annotations: { ...pod.annotations, [templateHashAnnotation]: hash } }, spec };
}

/** The Deployment `<md>-<role>`: replaced one replica at a time, never surging past the declared cards. */
export function renderRoleDeployment(
  md: ModelDeployment,
  role: ModelDeploymentRole,
  ctx: ModelDeploymentRenderContext,
): KubeObject<Deployment> {
  if ((role.size ?? 1) > 1)
    throw new Error(
      `role ${role.name}: size ${role.size} is not supported (one Pod per replica); set size to 1`,
    );
  // Admission refuses these; one stored before it did is not rendered with the operator's rights.
  const forbidden = baselineRefusals(role, `spec.roles[${md.spec.roles.indexOf(role)}]`);
  if (forbidden.length) throw new Error(`role ${role.name}: ${forbidden.join('; ')}`);
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: childMetadata(md, roleObjectName(md, role), roleLabels(md, role)),
    spec: {
      replicas: role.replicas ?? 1,
      selector: { matchLabels: deploymentSelector(md, role) },
      strategy: { type: 'RollingUpdate', rollingUpdate: { maxSurge: 0, maxUnavailable: 1 } },
      template: podTemplate(md, role, ctx),
    },
  };
}

interface ServiceShape {
  name: string;
  labels: Record<string, string>;
  selector: Record<string, string>;
  targetPort: number | string;
  protocol: string;
}

function service(md: ModelDeployment, shape: ServiceShape): KubeObject<Service> {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: childMetadata(md, shape.name, shape.labels),
    spec: {
      type: 'ClusterIP',
      selector: shape.selector,
      ports: [{ name: 'http', port: servicePort, targetPort: shape.targetPort, protocol: shape.protocol }],
    },
  };
}

/** `<md>` reaches every role by the named port, since roles may serve on different ports. */
export function renderServices(md: ModelDeployment): KubeObject<Service>[] {
  const whole = deploymentSelector(md);
  return [
    service(md, {
      name: deploymentName(md),
      labels: whole,
      selector: whole,
      targetPort: 'http',
      protocol: 'TCP',
    }),
    ...md.spec.roles.map((role) =>
      service(md, {
        name: roleObjectName(md, role),
        labels: roleLabels(md, role),
        selector: deploymentSelector(md, role),
        targetPort: servingPort(role),
        protocol: role.ports?.[0]?.protocol ?? 'TCP',
      }),
    ),
  ];
}

export function renderModelDeployment(
  md: ModelDeployment,
  ctx: ModelDeploymentRenderContext,
): RenderedModelDeployment {
  return {
    deployments: md.spec.roles.map((role) => renderRoleDeployment(md, role, ctx)),
    services: renderServices(md),
  };
}
