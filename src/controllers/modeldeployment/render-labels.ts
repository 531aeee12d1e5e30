// Names, labels and owner metadata of a ModelDeployment's children: `<md>` and `<md>-<role>`.
import type { ModelDeploymentRole } from '../../api/model-deployment.ts';
import type { ModelDeployment } from '../../api/types.ts';
import type { ObjectMeta, OwnerReference } from '../../kube/object.ts';
import { workerApiVersion } from '../../vocabulary/identity.ts';
import { componentLabel, instanceLabel, nameLabel } from '../../vocabulary/store-objects.ts';

export { componentLabel, instanceLabel, nameLabel };
export const roleKindLabel = 'modeldeployment.gpustack.ai/role-kind';
export const templateHashAnnotation = 'modeldeployment.gpustack.ai/template-hash';
export const modelDeploymentAppName = 'model-deployment';

export function deploymentName(md: ModelDeployment): string {
  const name = md.metadata.name;
  if (!name)
    throw new Error('ModelDeployment has no metadata.name; render only objects read from the apiserver');
  return name;
}

/** The Deployment and Service of one role: `<md>-<role>`. */
export function roleObjectName(md: ModelDeployment, role: ModelDeploymentRole): string {
  return `${deploymentName(md)}-${role.name}`;
}

export function roleKind(role: ModelDeploymentRole): 'Server' | 'Prefill' | 'Decode' {
  return role.kind ?? 'Server';
}

/** Selects every Pod of the deployment, or of one role when given. */
export function deploymentSelector(md: ModelDeployment, role?: ModelDeploymentRole): Record<string, string> {
  return {
    [nameLabel]: modelDeploymentAppName,
    [instanceLabel]: deploymentName(md),
    ...(role ? { [componentLabel]: role.name } : {}),
  };
}

/** Labels on a role's Pods and objects: the selector plus the role kind. */
export function roleLabels(md: ModelDeployment, role: ModelDeploymentRole): Record<string, string> {
  return { ...deploymentSelector(md, role), [roleKindLabel]: roleKind(role).toLowerCase() };
}

export function ownerReference(md: ModelDeployment): OwnerReference {
  return {
    apiVersion: workerApiVersion,
    kind: 'ModelDeployment',
    name: deploymentName(md),
    uid: md.metadata.uid ?? '',
    controller: true,
    blockOwnerDeletion: false,
  };
}

export function childMetadata(md: ModelDeployment, name: string, labels: Record<string, string>): ObjectMeta {
  return { name, namespace: md.metadata.namespace, labels, ownerReferences: [ownerReference(md)] };
}
