// Whether a disk tier started empty (KV-cache spec §7, `TierWasEmpty`): each member Pod's survey init
// container writes `entries=<n> control=<m>` to its termination message; the condition is decided once
// from the backend's first member Pods and never revisited. Pure.
import type { Pod } from 'kubernetes-types/core/v1.js';
import type { Condition } from '../../api/schema.ts';
import type { KubeObject } from '../../kube/object.ts';
import type { DecidedCondition } from '../../model/conditions.ts';
import { nameList } from '../../model/conditions.ts';

export const surveyContainerName = 'local-disk-survey';
/** Only Pods created this soon after the backend count as its first members. */
export const surveyWindowMs = 30 * 60_000;

export interface SurveyReading {
  pod: string;
  node: string;
  entries: number;
  control: number;
}

export function readSurvey(pod: KubeObject<Pod>): SurveyReading | undefined {
  const s = pod.status?.initContainerStatuses?.find((c) => c.name === surveyContainerName);
  const m = /entries=(-?\d+)\s+control=(-?\d+)/.exec(s?.state?.terminated?.message ?? '');
  if (!m) return undefined;
  return {
    pod: pod.metadata.name!,
    node: pod.spec?.nodeName ?? '?',
    entries: Number(m[1]),
    control: Number(m[2]),
  };
}

/** First member Pods of a backend: created within the survey window after the backend itself. */
export function firstMembers(pods: KubeObject<Pod>[], backendCreated: string | undefined): KubeObject<Pod>[] {
  const start = backendCreated ? Date.parse(backendCreated) : 0;
  return pods.filter((p) => Date.parse(p.metadata.creationTimestamp ?? '') - start <= surveyWindowMs);
}

/**
 * The condition, or undefined while undecided. `desired` is how many nodes the tier groups' DaemonSets
 * want; a reading with no control entries or an unreadable directory does not count.
 */
export function decideTierWasEmpty(
  readings: SurveyReading[],
  desired: number,
  previous: Condition | undefined,
): DecidedCondition | undefined {
  if (previous)
    return {
      type: previous.type,
      status: previous.status,
      reason: previous.reason,
      message: previous.message,
    };
  const valid = readings.filter((r) => r.control > 0 && r.entries >= 0);
  const full = valid.filter((r) => r.entries > 0);
  if (full.length) {
    return {
      type: 'TierWasEmpty',
      status: 'False',
      reason: 'PreexistingContent',
      message: `the tier directory already held files when the first members started: ${nameList(full.map((r) => `${r.node}: ${r.entries}`))}; nothing was removed — empty it yourself, or set cleanAfterDelete on the backend that wrote it`,
    };
  }
  const nodes = new Set(valid.map((r) => r.node));
  if (desired > 0 && nodes.size >= desired) {
    return {
      type: 'TierWasEmpty',
      status: 'True',
      reason: 'Empty',
      message: `the tier directory was empty on all ${nodes.size} node(s) when the first members started`,
    };
  }
  return undefined;
}
