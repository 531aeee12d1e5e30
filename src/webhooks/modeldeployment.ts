// Admission of ModelDeployments, and of Pods that opt in to cache injection.
import type { ModelDeployment } from '../api/types.ts';
import { injectLabel } from '../inject/types.ts';
import type { KubeObject } from '../kube/object.ts';
import { type AdmissionHandler, allow, deny } from '../kube/webhook-server.ts';
import type { DeploymentInformers } from '../operator-io/informers.ts';
import type { OperatorContext } from '../operator-io/operator-context.ts';
import { effectiveProtocol, storeProtocol } from '../vocabulary/backend-spec.ts';
import { domainOf } from '../vocabulary/domains.ts';
import type { HookSpec } from './configuration.ts';
import { verdictOf } from './findings.ts';
import { judgeConfirmingRefusals, resolveBinding } from './lookup.ts';
import { type ModelDeploymentAdmissionContext, validateModelDeployment } from './modeldeployment-rules.ts';
import {
  type AdmittedPod,
  bindingNameRefusal,
  frozenKeyRefusal,
  planPodInjection,
  podAnnotations,
} from './pod-injection-rules.ts';

export const modelDeploymentHook: HookSpec = {
  name: 'modeldeployments.worker.gpustack.ai',
  path: '/validate-modeldeployment',
  rules: [
    {
      apiGroups: ['worker.gpustack.ai'],
      apiVersions: ['v1'],
      operations: ['CREATE', 'UPDATE'],
      resources: ['modeldeployments'],
    },
  ],
  failurePolicy: 'Fail',
};

const optedIn = { matchLabels: { [injectLabel]: 'true' } };

export const podInjectionHook: HookSpec = {
  name: 'inject.kvcache.gpustack.ai',
  path: '/mutate-pod-kvcache',
  rules: [{ apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE'], resources: ['pods'] }],
  failurePolicy: 'Fail',
  objectSelector: optedIn,
};

export const podFreezeHook: HookSpec = {
  name: 'freeze.kvcache.gpustack.ai',
  path: '/validate-pod-kvcache',
  rules: [{ apiGroups: [''], apiVersions: ['v1'], operations: ['UPDATE'], resources: ['pods'] }],
  failurePolicy: 'Ignore',
  objectSelector: optedIn,
};

/** What admission needs of the Binding a deployment names: its domain's block size, its pool's transports. */
async function cacheTarget(
  ctx: OperatorContext,
  i: DeploymentInformers,
  md: ModelDeployment,
  namespace: string,
  fresh: boolean,
): Promise<
  Pick<ModelDeploymentAdmissionContext, 'poolProtocols' | 'domainBlockSize' | 'domainDtype' | 'tenant'>
> {
  const ref = md.spec.kvCache?.poolRef.name;
  const { binding, backend } = ref ? await resolveBinding(ctx, i, ref, namespace, fresh) : {};
  const groups = backend?.spec.connection.managed?.members;
  return {
    poolProtocols: groups && [...new Set(groups.map((g) => storeProtocol(effectiveProtocol(backend!, g))))],
    domainBlockSize: binding?.spec.domain?.blockSize,
    domainDtype: binding?.spec.domain?.dtype,
    ...(ref && binding ? { tenant: { binding: ref, domain: domainOf(binding) } } : {}),
  };
}

export function modelDeploymentAdmission(
  ctx: OperatorContext,
  i: DeploymentInformers,
): AdmissionHandler<ModelDeployment> {
  return async (req) => {
    const md = req.object!;
    const ns = req.namespace ?? md.metadata.namespace ?? 'default';
    const findings = await judgeConfirmingRefusals(
      async (fresh) =>
        validateModelDeployment(md, req.operation === 'UPDATE' ? req.oldObject : undefined, {
          dtypeOwned: ctx.settings.bool('model-deployment-kv-cache-dtype-owned'),
          instanceTypes: new Map(i.instanceTypes.list().map((t) => [t.metadata.name!, t])),
          ...(await cacheTarget(ctx, i, md, ns, fresh)),
        }),
      (f) => f.errors.length > 0,
    );
    return verdictOf(findings);
  };
}

export function podInjectionAdmission(
  ctx: OperatorContext,
  i: DeploymentInformers,
): AdmissionHandler<KubeObject<AdmittedPod>> {
  return async (req) => {
    const pod = req.object!;
    if (pod.metadata.labels?.[injectLabel] !== 'true') return allow();
    const ns = req.namespace ?? pod.metadata.namespace ?? 'default';
    const name = pod.metadata.annotations?.[podAnnotations.binding];
    const verdict = await judgeConfirmingRefusals(
      async (fresh) => {
        // A value that is no object name is refused by the plan; it is never looked up.
        const chain = name && !bindingNameRefusal(name) ? await resolveBinding(ctx, i, name, ns, fresh) : {};
        return planPodInjection(
          { ...pod, metadata: { ...pod.metadata, namespace: ns } },
          { ...chain, dtypeOwned: ctx.settings.bool('model-deployment-kv-cache-dtype-owned') },
        );
      },
      (v) => !v.ok,
    );
    return verdict.ok ? allow(undefined, verdict.patch) : deny(`KV cache injection: ${verdict.message}`, 400);
  };
}

export const podFreezeAdmission: AdmissionHandler<KubeObject<AdmittedPod>> = (req) => {
  const refusal = frozenKeyRefusal(req.oldObject!, req.object!);
  return refusal ? deny(refusal) : allow();
};
