// What a doctor check reports, and the helpers every check uses.
import type { Condition } from '../api/schema.ts';
import type { Snapshot } from './snapshot.ts';

/** error: something does not work; warning: it needs a person; info: expected, said so it is not mistaken. */
export type Severity = 'error' | 'warning' | 'info';

export interface Finding {
  /** Kind/name (Kind/namespace/name for namespaced objects). */
  object: string;
  severity: Severity;
  summary: string;
  evidence: string[];
  fix: string;
}

export interface Check {
  id: string;
  title: string;
  run(s: Snapshot): Finding[];
}

/** A condition as evidence: `Type=Status (Reason): message`. */
export const said = (c: Pick<Condition, 'type' | 'status' | 'reason' | 'message'>) =>
  `${c.type}=${c.status} (${c.reason}): ${c.message}`;
