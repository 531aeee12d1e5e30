// The ModelDeployments, InstanceType and admission context the ModelDeployment admission tests share.
import type { ModelDeploymentRole } from '../../src/api/model-deployment.ts';
import type { InstanceType, ModelDeployment } from '../../src/api/types.ts';
import {
  type ModelDeploymentAdmissionContext,
  validateModelDeployment,
} from '../../src/webhooks/modeldeployment-rules.ts';

export const a10g: InstanceType = {
  apiVersion: 'worker.gpustack.ai/v1',
  kind: 'InstanceType',
  metadata: { name: 'nvidia-a10g' },
  spec: {
    acceleratable: true,
    acceleratorGroup: 'nvidia-a10g',
    manufacturer: 'nvidia',
    os: 'linux',
    arch: 'amd64',
    unitResources: { cpu: '8', ram: '32Gi' },
    localStorage: '100Gi',
  },
};

export const context = (
  over: Partial<ModelDeploymentAdmissionContext> = {},
): ModelDeploymentAdmissionContext => ({
  dtypeOwned: true,
  instanceTypes: new Map([['nvidia-a10g', a10g]]),
  ...over,
});

export function md(
  role: Partial<ModelDeploymentRole> = {},
  opts: {
    engine?: 'vLLM' | 'SGLang';
    kvCache?: boolean;
    finalizers?: string[];
    annotations?: Record<string, string>;
  } = {},
): ModelDeployment {
  return {
    apiVersion: 'worker.gpustack.ai/v1',
    kind: 'ModelDeployment',
    metadata: {
      name: 'chat',
      namespace: 'team-a',
      finalizers: opts.finalizers ?? [],
      ...(opts.annotations ? { annotations: opts.annotations } : {}),
    },
    spec: {
      model: { name: 'Qwen/Qwen2.5-7B-Instruct' },
      engine: { name: opts.engine ?? 'vLLM', version: '0.29.0' },
      ...(opts.kvCache === false ? {} : { kvCache: { poolRef: { name: 'team-a' } } }),
      roles: [{ name: 'server', instanceType: 'nvidia-a10g', ...role }],
    },
  };
}

export const errorsOf = (obj: ModelDeployment, old?: ModelDeployment, ctx = context()) =>
  validateModelDeployment(obj, old, ctx).errors;
