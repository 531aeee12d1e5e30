// Conditions as a status carries them, and readers of the conditions a decision returns.
import type { Condition } from '../../src/api/schema.ts';
import type { DecidedCondition } from '../../src/vocabulary/conditions.ts';

export const cond = (type: string, status: Condition['status'], reason: string, message = ''): Condition => ({
  type,
  status,
  reason,
  message,
  lastTransitionTime: '2025-01-01T00:00:00Z',
});

/** The status and reason of one condition, or undefined when it is absent. */
export function conditionOf(d: { conditions: DecidedCondition[] }, type: string) {
  const c = d.conditions.find((x) => x.type === type);
  return c && { status: c.status, reason: c.reason };
}

export function messageOf(d: { conditions: DecidedCondition[] }, type: string): string {
  return d.conditions.find((x) => x.type === type)?.message ?? '';
}
