// The placement fields of a member group, the leader or a ModelDeployment role, as the Pod spec fields
// of the same names (src/api/placement.ts). Pure.
import type { PodSpec } from 'kubernetes-types/core/v1.js';
import { nameList } from './conditions.ts';

export interface Placement {
  tolerations?: PodSpec['tolerations'];
  affinity?: { nodeAffinity?: NonNullable<PodSpec['affinity']>['nodeAffinity'] };
  priorityClassName?: string;
}

/** The Pod spec fields a placement sets; none for what it leaves unset. */
export function podPlacement(p: Placement): Pick<PodSpec, 'tolerations' | 'affinity' | 'priorityClassName'> {
  return {
    ...(p.tolerations?.length ? { tolerations: p.tolerations } : {}),
    ...(p.affinity?.nodeAffinity ? { affinity: { nodeAffinity: p.affinity.nodeAffinity } } : {}),
    ...(p.priorityClassName ? { priorityClassName: p.priorityClassName } : {}),
  };
}

/** Fields that decide only where a Pod is scheduled: changing them restarts no running member. */
export const schedulingFields = ['nodeSelector', 'tolerations', 'affinity', 'priorityClassName'] as const;

type Taint = { key: string; value?: string; effect: string };
type Toleration = NonNullable<PodSpec['tolerations']>[number];

/** Whether `t` tolerates `taint`, by Kubernetes' rule. */
export function tolerates(t: Toleration, taint: Taint): boolean {
  if (t.effect && t.effect !== taint.effect) return false;
  if (t.operator === 'Exists') return !t.key || t.key === taint.key;
  return t.key === taint.key && (t.value ?? '') === (taint.value ?? '');
}

/** The taints of a node that keep Pods with these tolerations off it (NoSchedule, NoExecute). */
export function untoleratedTaints(
  taints: Taint[] | undefined,
  tolerations: Toleration[] | undefined,
): Taint[] {
  return (taints ?? []).filter(
    (taint) => taint.effect !== 'PreferNoSchedule' && !(tolerations ?? []).some((t) => tolerates(t, taint)),
  );
}

export const taintText = (t: Taint) => `${t.key}${t.value ? `=${t.value}` : ''}:${t.effect}`;

type TaintedNode = { metadata: { name?: string }; spec?: { taints?: Taint[] } };

/**
 * The scheduler's message for a Pod it cannot place, with the taints that keep it off each node named
 * (the scheduler counts "untolerated taint(s)" without naming them), and `fix` when there are some.
 */
export function unschedulableText(
  message: string,
  tolerations: Toleration[] | undefined,
  nodes: TaintedNode[],
  fix?: string,
): string {
  const kept = nodes.flatMap((n) => {
    const taints = untoleratedTaints(n.spec?.taints, tolerations);
    return taints.length ? [`${n.metadata.name} (${taints.map(taintText).join(', ')})`] : [];
  });
  if (!kept.length) return message;
  return `${message.replace(/\.$/, '')}; untolerated taints: ${nameList(kept, 5)}${fix ? `: ${fix}` : ''}`;
}
