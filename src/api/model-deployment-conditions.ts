// The conditions of a ModelDeployment: each type with the reasons it may carry.
import { conditionReasons, conditionTypes } from './condition-table.ts';
import { CacheAttachedReason, ReplicasUpToDateReason } from './model-deployment.ts';

export const modelDeploymentConditions = {
  DomainRegistered: ['NotApplicable', 'BindingNotFound', 'BindingDeleting', 'BindingNotReady', 'Registered'],
  CacheAttached: Object.values(CacheAttachedReason),
  ReplicasUpToDate: Object.values(ReplicasUpToDateReason),
  RoleKindsReady: ['AllKindsReady', 'KindsNotReady', 'Unschedulable'],
  KVEventsPublishing: ['NotApplicable'],
} as const;

export const ModelDeploymentCondition = conditionTypes(modelDeploymentConditions);
export const ModelDeploymentReason = conditionReasons(modelDeploymentConditions);
