// Whether kvpool may apply a child over the object that holds its name: only over one this very owner
// controls (an ownerReference with controller: true and the owner's uid). Anything else — a user's
// Service, another ModelDeployment's Deployment, a leftover of an owner deleted and created again — is
// left exactly as it is and reported: server-side apply with force would take its fields over and
// the owner's deletion would delete it. Pure.
import type { KubeObject } from '../kube/object.ts';

/** A child kvpool renders whose name is held by an object it does not control. */
export interface ChildConflict {
  kind: string;
  namespace?: string;
  name: string;
  /** Who does control it: `ModelDeployment other`, or undefined when nothing does. */
  controller?: string;
}

export type ChildClaim = { kind: 'absent' } | { kind: 'ours' } | { kind: 'foreign'; conflict: ChildConflict };

export interface ClaimOptions {
  /** Objects of kvpool's own making that carry no owner reference (the Lease the store's leader creates). */
  recognized?: (live: KubeObject) => boolean;
  /** The child is rendered with a plain owner reference (controller: false): any reference to the owner's uid. */
  coOwned?: boolean;
}

/**
 * Whether `live` (the object holding the child's name, undefined when none) may be applied over by the
 * owner with `ownerUid`: only when that owner controls it (or, for a co-owned child, owns it).
 */
export function claimChild(
  live: KubeObject | undefined,
  ownerUid: string | undefined,
  options: ClaimOptions = {},
): ChildClaim {
  if (!live) return { kind: 'absent' };
  const refs = live.metadata.ownerReferences ?? [];
  const mine = refs.some((r) => r.uid === ownerUid && (options.coOwned || r.controller === true));
  if (ownerUid && mine) return { kind: 'ours' };
  if (refs.length === 0 && options.recognized?.(live)) return { kind: 'ours' };
  const controller = refs.find((r) => r.controller === true);
  return {
    kind: 'foreign',
    conflict: {
      kind: live.kind,
      ...(live.metadata.namespace ? { namespace: live.metadata.namespace } : {}),
      name: live.metadata.name ?? '',
      ...(controller ? { controller: `${controller.kind} ${controller.name}` } : {}),
    },
  };
}

function described(c: ChildConflict): string {
  const name = c.namespace ? `${c.namespace}/${c.name}` : c.name;
  return `${c.kind} ${name} (${c.controller ? `controlled by ${c.controller}` : 'no controller owns it'})`;
}

/**
 * The status message of conflicts: what is left alone, why, and the fix. `owner` is the kind of the
 * object whose children they are (ModelDeployment, KVCacheBackend); `whose` names it in the message,
 * `this <owner>` unless the status is another object's.
 */
export function childConflictMessage(
  conflicts: ChildConflict[],
  owner: string,
  whose = `this ${owner}`,
): string {
  const fix = `create the ${owner} under another name`;
  if (conflicts.length === 1) {
    const c = conflicts[0]!;
    return `${described(c)} already exists and is not ${whose}'s own, so kvpool leaves it as it is and applies nothing over it: rename or delete that ${c.kind}, or ${fix}`;
  }
  return `${conflicts.map(described).join(', ')} already exist and are not ${whose}'s own, so kvpool leaves them as they are and applies nothing over them: rename or delete them, or ${fix}`;
}
