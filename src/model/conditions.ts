// Condition bookkeeping shared by every controller: a pass decides type/status/reason/message; the
// timestamps and observedGeneration are filled here, lastTransitionTime moving only on a status flip.
import type { Condition } from '../api/schema.ts';
import { apiTime } from '../kube/time.ts';

export type ConditionStatus = 'True' | 'False' | 'Unknown';

export interface DecidedCondition {
  type: string;
  status: ConditionStatus;
  reason: string;
  message: string;
}

const maxMessage = 32768;

export function decided(
  type: string,
  status: ConditionStatus,
  reason: string,
  message: string,
): DecidedCondition {
  return { type, status, reason, message };
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
