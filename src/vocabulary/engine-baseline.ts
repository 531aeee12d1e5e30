// What a ModelDeployment role may not ask for, since the operator creates its engine Pods with its own
// rights: the fields Pod Security 'baseline' forbids that a role can carry
// (docs/decisions/0029-modeldeployment-is-not-a-deputy.md). Admission refuses them and the renderer
// will not render them (a deployment stored before the rule).

import type { ModelDeploymentRole } from '../api/model-deployment.ts';
import { hostPathRefusal, privilegedRefusal } from '../api/model-deployment-role.ts';

/** One refusal per baseline-forbidden field of the role at `field` (spec.roles[i]), naming its path. */
export function baselineRefusals(role: ModelDeploymentRole, field: string): string[] {
  const refusals: string[] = [];
  if (role.privileged) refusals.push(`${field}.privileged: ${privilegedRefusal}`);
  (role.additionalVolumes ?? []).forEach((volume, j) => {
    if (volume.hostPath !== undefined)
      refusals.push(`${field}.additionalVolumes[${j}].hostPath: ${hostPathRefusal}`);
  });
  return refusals;
}
