// Condition bookkeeping shared by every controller: a pass decides type/status/reason/message; the
// timestamps and observedGeneration are filled here, lastTransitionTime moving only on a status flip.
import type { ConditionTable, RelayedReason } from '../api/condition-table.ts';
import type { Condition } from '../api/schema.ts';
import { apiTime } from '../kube/time.ts';

export type ConditionStatus = 'True' | 'False' | 'Unknown';

export interface DecidedCondition<T extends string = string, R extends string = string> {
  type: T;
  status: ConditionStatus;
  reason: R;
  message: string;
}

const maxMessage = 32768;

/** The conditions of one kind's table, decided: a type or reason the table lacks fails the typecheck. */
export function deciderOf<Table extends ConditionTable>(_table: Table) {
  return <T extends keyof Table & string, R extends Table[T][number] | RelayedReason>(
    type: T,
    status: ConditionStatus,
    reason: R,
    message: string,
  ): DecidedCondition<T, R> => ({ type, status, reason, message });
}

export function mergeConditions(
  previous: Condition[] | undefined,
  decided: DecidedCondition[],
  generation: number | undefined,
  now: Date,
): Condition[] {
  return decided.map((d) => {
    const old = previous?.find((c) => c.type === d.type);
    const message =
      d.message.length > maxMessage ? `${d.message.slice(0, maxMessage - 14)}… (truncated)` : d.message;
    return {
      type: d.type,
      status: d.status,
      reason: d.reason,
      message,
      ...(generation !== undefined ? { observedGeneration: generation } : {}),
      lastTransitionTime: old && old.status === d.status ? old.lastTransitionTime : apiTime(now),
    };
  });
}

/** "a, b, c and 3 more": name lists in messages stay short. */
export function nameList(names: string[], limit = 20): string {
  if (names.length <= limit) return names.join(', ');
  return `${names.slice(0, limit).join(', ')} and ${names.length - limit} more`;
}
