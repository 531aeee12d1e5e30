// Rollouts that keep the cache (pure): member Pods are recreated one at a time, each only once the
// previous replacement has mounted its segment; the serving leader is asked to step down once, when
// the members have rolled and its successors of the new template run, or when its node is cordoned. See
// docs/decisions/0022-rollouts-that-keep-the-cache.md.

import { ordinal } from '../../kube/ordinal.ts';

export interface MemberPod {
  name: string;
  group: number;
  /** The pod-spec fingerprint the Pod was made with. */
  hash: string | undefined;
  nodeName?: string;
  podIP?: string;
  ready: boolean;
  deleting: boolean;
}

export interface MemberRollInput {
  /** Per member group, in order: its template's fingerprint and the Pods its DaemonSet wants. */
  groups: { hash: string; desired: number | undefined }[];
  pods: MemberPod[];
  /** Hosts the master lists a segment from; undefined while no listing is at hand. */
  mountedHosts: ReadonlySet<string> | undefined;
}

export type MemberRollPlan =
  | { kind: 'done' }
  | { kind: 'wait'; message: string }
  | { kind: 'recreate'; pod: string; message: string };

const where = (p: MemberPod) => `${p.name}${p.nodeName ? ` on ${p.nodeName}` : ''}`;

/** Whether a member has mounted its segment: Ready (its port opens after the mount), and listed by the master. */
function mounted(p: MemberPod, hosts: ReadonlySet<string> | undefined): boolean {
  if (!p.ready) return false;
  return hosts === undefined || (p.podIP !== undefined && hosts.has(p.podIP));
}

/** The next step of a member rollout: at most one Pod of the backend is ever being replaced. */
export function planMemberRoll(input: MemberRollInput): MemberRollPlan {
  const live = input.pods.filter((p) => !p.deleting);
  const outdated = live
    .filter((p) => p.hash !== input.groups[p.group]?.hash)
    .sort(
      (a, b) => a.group - b.group || ordinal(a.nodeName ?? '', b.nodeName ?? '') || ordinal(a.name, b.name),
    );
  if (outdated.length === 0) return { kind: 'done' };
  const progress = `${live.length - outdated.length} of ${live.length} member Pods run the current template`;
  const stopping = input.pods.find((p) => p.deleting);
  if (stopping) return { kind: 'wait', message: `${progress}; waiting for ${where(stopping)} to stop` };
  for (const [group, g] of input.groups.entries()) {
    const count = live.filter((p) => p.group === group).length;
    if (g.desired !== undefined && count < g.desired) {
      return {
        kind: 'wait',
        message: `${progress}; waiting for group ${group} to have a member on each of its ${g.desired} nodes (${count} now)`,
      };
    }
  }
  const unmounted = live.find(
    (p) => p.hash === input.groups[p.group]?.hash && !mounted(p, input.mountedHosts),
  );
  if (unmounted) {
    const why = unmounted.ready ? 'to be listed by the master' : 'to mount its segment';
    return { kind: 'wait', message: `${progress}; waiting for the new member ${where(unmounted)} ${why}` };
  }
  const next = outdated[0]!;
  return { kind: 'recreate', pod: next.name, message: `${progress}; recreating ${where(next)}` };
}

export interface LeaderPod {
  name: string;
  hash: string | undefined;
  podIP?: string;
  nodeName?: string;
  /** The leader container runs (a standby campaigns, or the leader serves). */
  running: boolean;
  deleting: boolean;
  /** Its node is cordoned (spec.unschedulable), as a drain does first. */
  nodeCordoned: boolean;
}

export interface HandoverInput {
  /** The current leader template's fingerprint. */
  hash: string;
  pods: LeaderPod[];
  /** The Lease holder, `<pod IP>:<rpc port>`. */
  holder: string | undefined;
  /** The Pods the Lease asks to step down (or stay down) now. */
  stepDown: string[];
  /** Members are still being recreated: the old master keeps their keys until they are done. */
  membersRolling?: boolean;
}

export interface HandoverPlan {
  /** The Pods the Lease must ask not to lead, sorted; empty clears the request. */
  stepDown: string[];
  /** Why leadership stays or moves, while a rollout or a drain is under way. */
  message?: string;
}

/**
 * Whether the Lease should ask leader Pods not to lead, and which. A handover names the leader and
 * every other Pod that should not lead next (an outdated template, a cordoned node), so the Lease moves
 * once, to a Pod that stays; the names stay while those Pods do, and their reason holds.
 */
export function planHandover(input: HandoverInput): HandoverPlan {
  const live = input.pods.filter((p) => !p.deleting);
  const unfit = (p: LeaderPod) => p.hash !== input.hash || p.nodeCordoned;
  const kept = live.filter((p) => input.stepDown.includes(p.name) && unfit(p)).map((p) => p.name);
  const host = input.holder?.slice(0, input.holder.lastIndexOf(':'));
  const leader = host ? live.find((p) => p.podIP === host) : undefined;
  const waiting = (message: string): HandoverPlan => ({ stepDown: kept.sort(), message });
  if (!leader || !unfit(leader)) {
    return kept.length
      ? waiting(
          `${kept.join(', ')} stepped down; waiting for ${kept.length > 1 ? 'them' : 'it'} to be replaced`,
        )
      : { stepDown: [] };
  }
  const successors = live.filter((p) => p.running && !unfit(p));
  const why = leader.hash !== input.hash ? 'outdated template' : 'its node is cordoned';
  if (leader.hash !== input.hash) {
    // Pods of the new template still starting would miss the one handover.
    const starting = live.filter((p) => p.hash === input.hash && p.nodeName && !p.running);
    if (!successors.length || starting.length) {
      return waiting(
        `${leader.name} leads on the outdated template until the new replicas run (${successors.length} running, ${starting.length} starting)`,
      );
    }
    // A new master starts empty: the old one keeps serving every key until the members have rolled.
    if (input.membersRolling)
      return waiting(`${leader.name} leads on the outdated template until the members have rolled`);
  } else if (!successors.length) {
    return waiting(
      `${leader.name} leads on a cordoned node: no running standby on another node to hand over to`,
    );
  }
  const stepDown = [...new Set([...kept, ...live.filter(unfit).map((p) => p.name)])].sort();
  return { stepDown, message: `handing leadership over from ${leader.name} (${why})` };
}
