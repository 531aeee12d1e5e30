// Update rules for spec.connection.managed.members: groups have no names, so a group's position is its
// identity (it names the DaemonSet <name>-member-<i> and the member's management port).
import type { MemberGroup } from '../api/kvcache-backend.ts';

const membersPath = 'spec.connection.managed.members';

/**
 * The error for the first group that moved to another position (a swap, or removing a group that is
 * not the last), or undefined. Later moves usually follow from the first, so only it is reported.
 */
export function positionRefusal(
  before: readonly MemberGroup[],
  after: readonly MemberGroup[],
): string | undefined {
  // A group "stays" when its position still holds a group that matches it.
  const stays = (j: number) => j < after.length && sameGroup(after[j]!, before[j]!);
  for (let i = 0; i < Math.min(before.length, after.length); i++) {
    if (stays(i)) continue;
    // The group now at i came from j, and j no longer holds it: it moved. Otherwise an in-place edit.
    const from = before.findIndex((group, j) => j !== i && !stays(j) && sameGroup(after[i]!, group));
    if (from < 0) continue;
    const swapped = from < after.length && sameGroup(after[from]!, before[i]!);
    const what = swapped
      ? `the groups at members[${i}] and members[${from}] changed places`
      : `the group that was at members[${from}] now sits at members[${i}]`;
    return `${membersPath}[${i}]: ${what}, but a member group's position is its identity, so groups cannot be reordered or removed from the middle; restore the previous order, then edit a group in place (for example narrow its nodeSelector) or remove only the last group`;
  }
  return undefined;
}

/** Errors for adding, removing or re-pathing a disk tier on a position both lists have. */
export function diskTierRefusals(before: readonly MemberGroup[], after: readonly MemberGroup[]): string[] {
  const out: string[] = [];
  const shared = Math.min(before.length, after.length);
  for (let i = 0; i < shared; i++) {
    const was = tierPath(before[i]!);
    const is = tierPath(after[i]!);
    if (was === is) continue;
    const at = `${membersPath}[${i}].localDisks`;
    if (was === undefined) {
      const hint = reorderHint(before, is!, i, 'was declared at');
      out.push(
        `${at}: a disk tier cannot be added to an existing member group${hint}; declare the tier on a new backend, or on a new group appended to members`,
      );
    } else if (is === undefined) {
      const hint = reorderHint(after, was, i, 'now sits at');
      out.push(
        `${at}: the disk tier at ${was} cannot be removed from an existing member group${hint}; only removing the last group takes its tier along, otherwise declare the tier on a new backend and move the pools there`,
      );
    } else {
      out.push(
        `${at}[0].path: a disk tier cannot move from ${was} to ${is} (the path is fixed for the group's lifetime); declare the tier at ${is} on a new backend and move the pools there`,
      );
    }
  }
  return out;
}

function reorderHint(groups: readonly MemberGroup[], path: string, position: number, verb: string): string {
  const other = groups.findIndex((group, j) => j !== position && tierPath(group) === path);
  return other < 0
    ? ''
    : ` (the tier at ${path} ${verb} members[${other}]: groups cannot be reordered, keep them in their previous order)`;
}

function tierPath(group: MemberGroup): string | undefined {
  return group.localDisks?.[0]?.path;
}

/** The spec's matching heuristic: same nodeSelector, medium and capacityPerMember. */
function sameGroup(a: MemberGroup, b: MemberGroup): boolean {
  return (
    a.medium === b.medium &&
    String(a.capacityPerMember) === String(b.capacityPerMember) &&
    sameMap(a.nodeSelector ?? {}, b.nodeSelector ?? {})
  );
}

function sameMap(a: Record<string, string>, b: Record<string, string>): boolean {
  const keys = Object.keys(a);
  return (
    keys.length === Object.keys(b).length && keys.every((key) => Object.hasOwn(b, key) && a[key] === b[key])
  );
}
