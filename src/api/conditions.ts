// Every kind's condition table, by kind, and one condition read back from an object's status with its
// type and reason as that kind's table names them: a misspelt type or a reason compared against one the
// table lacks fails the typecheck.
import type { ConditionTable, ReasonOf } from './condition-table.ts';
import { backendConditions } from './kvcache-backend-conditions.ts';
import { bindingConditions } from './kvcache-pool-binding-conditions.ts';
import { poolConditions } from './kvcache-pool-conditions.ts';
import { modelDeploymentConditions } from './model-deployment-conditions.ts';
import type { Condition } from './schema.ts';

export const conditionTables = {
  KVCacheBackend: backendConditions,
  KVCachePool: poolConditions,
  KVCachePoolBinding: bindingConditions,
  ModelDeployment: modelDeploymentConditions,
} as const satisfies Record<string, ConditionTable>;

type Tables = typeof conditionTables;

/** A condition as read back from an object's status. */
export type ConditionOf<T extends ConditionTable, K extends keyof T & string> = Omit<
  Condition,
  'type' | 'reason'
> & { type: K; reason: ReasonOf<T, K> };

interface WithConditions {
  kind: keyof Tables;
  status?: { conditions?: readonly Condition[] };
}

/** The condition of `type` in an object's status, if reported. */
export function conditionOf<O extends WithConditions, K extends keyof Tables[O['kind']] & string>(
  object: O | undefined,
  type: K,
): ConditionOf<Tables[O['kind']], K> | undefined {
  const found = object?.status?.conditions?.find((c) => c.type === type);
  return found as ConditionOf<Tables[O['kind']], K> | undefined;
}
