// What a ModelDeployment role runs, as the controller renders it and admission judges it: its engine
// family, whether it takes over its argv, and the port it serves on.
import type { ModelDeploymentRole } from '../api/model-deployment.ts';
import type { InstanceType, ModelDeployment } from '../api/types.ts';
import type { EngineFamily } from '../inject/types.ts';

export const defaultServingPort = 8000;

/** A role takes over its argv when it sets command: the operator then adds nothing to it. */
export function isTakeOver(role: ModelDeploymentRole): boolean {
  return Boolean(role.command?.length);
}

/** vLLM on an Ascend InstanceType runs vLLM-Ascend, whose store connector differs. */
export function engineFamily(md: ModelDeployment, type: InstanceType): EngineFamily {
  if (md.spec.engine.name === 'SGLang') return 'sglang';
  return type.spec.manufacturer?.toLowerCase() === 'ascend' ? 'vllm-ascend' : 'vllm';
}

/** The port the engine serves on: the role's first port, else 8000. */
export function servingPort(role: ModelDeploymentRole): number {
  return role.ports?.[0]?.port ?? defaultServingPort;
}
