// ModelDeployments: one in team-a serving Qwen2.5-7B with vLLM, its roles on nvidia-a10g unless said.
import type { ModelDeploymentRole, ModelDeploymentSpec } from '../../src/api/model-deployment.ts';
import type { ModelDeployment } from '../../src/api/types.ts';
import type { ObjectMeta } from '../../src/kube/object.ts';
import { v1 } from './api.ts';

/** The runner image a role runs when a test names one rather than a version. */
export const runnerImage = 'gpustack/runner:cuda13.0-vllm0.29.0';

export interface ModelDeploymentParts {
  /** Over the name and namespace team-a. */
  metadata?: Partial<ObjectMeta>;
  /** Over the model and engine (vLLM 0.29.0); no kvCache unless given. */
  spec?: Partial<Omit<ModelDeploymentSpec, 'roles'>>;
  /** One role each, over name `server` and instanceType `nvidia-a10g`; one such role when absent. */
  roles?: Partial<ModelDeploymentRole>[];
}

export function modelDeployment(name = 'chat', parts: ModelDeploymentParts = {}): ModelDeployment {
  return {
    apiVersion: v1,
    kind: 'ModelDeployment',
    metadata: { name, namespace: 'team-a', ...parts.metadata },
    spec: {
      model: { name: 'Qwen/Qwen2.5-7B-Instruct' },
      engine: { name: 'vLLM', version: '0.29.0' },
      ...parts.spec,
      roles: (parts.roles ?? [{}]).map((r) => ({ name: 'server', instanceType: 'nvidia-a10g', ...r })),
    },
  };
}

/** ModelDeployment `chat` as admission judges it: cached in pool team-a unless `kvCache` is false. */
export function md(
  role: Partial<ModelDeploymentRole> = {},
  opts: {
    engine?: 'vLLM' | 'SGLang';
    kvCache?: boolean;
    finalizers?: string[];
    annotations?: Record<string, string>;
  } = {},
): ModelDeployment {
  return modelDeployment('chat', {
    metadata: {
      finalizers: opts.finalizers ?? [],
      ...(opts.annotations ? { annotations: opts.annotations } : {}),
    },
    spec: {
      engine: { name: opts.engine ?? 'vLLM', version: '0.29.0' },
      ...(opts.kvCache === false ? {} : { kvCache: { poolRef: { name: 'team-a' } } }),
    },
    roles: [role],
  });
}
