// What the admission webhooks judge an object in: the objects it names, read from the caches.
import type { ModelDeploymentAdmissionContext } from '../../src/webhooks/modeldeployment-rules.ts';
import type { PodInjectionContext } from '../../src/webhooks/pod-injection-rules.ts';
import { backend } from './backend.ts';
import { binding } from './binding.ts';
import { a10g } from './instance-type.ts';
import { readyPool } from './pool.ts';

export const modelDeploymentContext = (
  over: Partial<ModelDeploymentAdmissionContext> = {},
): ModelDeploymentAdmissionContext => ({
  dtypeOwned: true,
  instanceTypes: new Map([['nvidia-a10g', a10g]]),
  ...over,
});

/** Binding team-a (domain qwen-fp8-v1, fp8) on the Ready walkthrough pool and backend. */
export const injectionContext = (over: Partial<PodInjectionContext> = {}): PodInjectionContext => ({
  binding: binding('team-a', 'team-a', { domain: 'qwen-fp8-v1', blockSize: 16, dtype: 'fp8_e4m3' }),
  pool: readyPool(),
  backend: backend(),
  dtypeOwned: true,
  ...over,
});
