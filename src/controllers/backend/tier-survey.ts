// Whether a disk tier started empty (`TierWasEmpty`): each member Pod's survey init
// container writes `entries=<n> control=<m> tier=<verdict> marker=<uid|none>` to its termination
// message; the condition is decided once from the backend's first member Pods and never revisited,
// except a refusal of another backend's files (decision 45), which holds while any member reports one. Pure.
import type { Pod } from 'kubernetes-types/core/v1.js';
import { BackendCondition, BackendReason, backendConditions } from '../../api/kvcache-backend-conditions.ts';
import type { Condition } from '../../api/schema.ts';
import type { KubeObject } from '../../kube/object.ts';
import { type DecidedCondition, deciderOf, nameList } from '../../vocabulary/conditions.ts';

const decided = deciderOf(backendConditions);

export const surveyContainerName = 'local-disk-survey';
/** Only Pods created this soon after the backend count as its first members. */
export const surveyWindowMs = 30 * 60_000;

/**
 * What the survey did with the directory: claimed it empty (`new`), found its own marker (`own`),
 * emptied another backend's files (`removed`), or stopped the Pod before the store could read them
 * (`refused`, `unremovable`). Absent from surveys older than the marker.
 */
export const tierVerdicts = ['new', 'own', 'removed', 'refused', 'unremovable'] as const;
export type TierVerdict = (typeof tierVerdicts)[number];

export interface SurveyReading {
  pod: string;
  node: string;
  entries: number;
  control: number;
  tier?: TierVerdict;
  /** The UID the marker named before the survey, when there was one. */
  marker?: string;
}

/** The survey's last run: its current termination, or the previous one while it waits to run again. */
export function readSurvey(pod: KubeObject<Pod>): SurveyReading | undefined {
  const s = pod.status?.initContainerStatuses?.find((c) => c.name === surveyContainerName);
  const message = s?.state?.terminated?.message ?? s?.lastState?.terminated?.message ?? '';
  const m = /entries=(-?\d+)\s+control=(-?\d+)(?:\s+tier=(\w+)\s+marker=(\S+))?/.exec(message);
  if (!m) return undefined;
  const tier = tierVerdicts.find((v) => v === m[3]);
  return {
    pod: pod.metadata.name!,
    node: pod.spec?.nodeName ?? '?',
    entries: Number(m[1]),
    control: Number(m[2]),
    ...(tier ? { tier } : {}),
    ...(m[4] && m[4] !== 'none' ? { marker: m[4] } : {}),
  };
}

const refusedVerdicts: readonly (TierVerdict | undefined)[] = ['refused', 'unremovable'];

function describeForeign(r: SurveyReading): string {
  return `${r.node}: ${r.entries} (${r.marker ? `marked by backend UID ${r.marker}` : 'no marker'})`;
}

/**
 * TierWasEmpty=False/ForeignContentRefused while any member's survey refused its directory; it names
 * the field that decides and both fixes. `field` is the group's localDisks[0] path in the spec.
 */
export function decideTierRefusal(
  readings: SurveyReading[],
  field: string,
  owner: string,
): DecidedCondition | undefined {
  const refused = readings.filter((r) => refusedVerdicts.includes(r.tier));
  if (!refused.length) return undefined;
  const unremovable = refused.filter((r) => r.tier === 'unremovable');
  return decided(
    BackendCondition.TierWasEmpty,
    'False',
    BackendReason.ForeignContentRefused,
    `the tier directory holds files this backend did not write on ${nameList(refused.map(describeForeign))}; ` +
      'those members stay stopped so the store never serves another backend’s objects. ' +
      (unremovable.length
        ? `${field}.foreignContent is Remove but the files could not be removed on ${nameList(unremovable.map((r) => r.node))}: give the store’s user write access to them, or empty the directory yourself`
        : `Empty the directory on those nodes, or set ${field}.foreignContent: Remove to have members empty it; if they are this backend’s own files from before tier markers, write the line uid=${owner} to .kvpool-tier in the directory`),
  );
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
  if (previous && previous.reason !== BackendReason.ForeignContentRefused)
    return {
      type: previous.type,
      status: previous.status,
      reason: previous.reason,
      message: previous.message,
    };
  const valid = readings.filter((r) => r.control > 0 && r.entries >= 0);
  const nodes = new Set(valid.map((r) => r.node));
  const everyNode = desired > 0 && nodes.size >= desired;
  const removed = valid.filter((r) => r.tier === 'removed');
  if (removed.length) {
    // Decided once, so only when every node's survey ran: the message names every directory emptied.
    if (!everyNode) return undefined;
    return decided(
      BackendCondition.TierWasEmpty,
      'False',
      BackendReason.ForeignContentRemoved,
      `the tier directory held files this backend did not write, which members removed before the store started (foreignContent: Remove): ${nameList(removed.map(describeForeign))}`,
    );
  }
  // A directory this backend already marked was claimed empty (or emptied) by one of its own members.
  const full = valid.filter((r) => r.entries > 0 && r.tier !== 'own');
  if (full.length) {
    return decided(
      BackendCondition.TierWasEmpty,
      'False',
      BackendReason.PreexistingContent,
      `the tier directory already held files when the first members started: ${nameList(full.map((r) => `${r.node}: ${r.entries}`))}; nothing was removed — empty it yourself, or set cleanAfterDelete on the backend that wrote it`,
    );
  }
  if (everyNode) {
    return decided(
      BackendCondition.TierWasEmpty,
      'True',
      BackendReason.Empty,
      `the tier directory was empty on all ${nodes.size} node(s) when the first members started`,
    );
  }
  return undefined;
}
