// What the backend's status needs to know about one leader or member Pod, read from the Pod object.
import type { ContainerStatus, Node, Pod } from 'kubernetes-types/core/v1.js';
import { type RelayedReason, relayed } from '../../api/condition-table.ts';
import { BackendReason, type PodFaultReason } from '../../api/kvcache-backend-conditions.ts';
import type { KubeObject } from '../../kube/object.ts';
import { unschedulableText } from '../../vocabulary/placement.ts';

export interface PodView {
  name: string;
  ready: boolean;
  podIP?: string;
  nodeName?: string;
  deleting: boolean;
  /** A fault the Pod cannot get out of by waiting (unschedulable, crash looping, image pull…). */
  fault?: PodFault;
}

/** A reason of our own, or the kubelet's waiting reason (ErrImagePull…) relayed as it is. */
export interface PodFault {
  reason: PodFaultReason | RelayedReason;
  message: string;
}

/** Waiting reasons that are progress, not faults. */
const progress = new Set(['ContainerCreating', 'PodInitializing']);

/** Foreign text in a message is clipped to 2048 characters (code points), marked as clipped. */
export function clipForeign(text: string, limit = 2048): string {
  const chars = [...text];
  return chars.length <= limit ? text : `${chars.slice(0, limit).join('')}… (truncated)`;
}

function crashFault(s: ContainerStatus, reason: PodFaultReason): PodFault {
  const t = s.lastState?.terminated;
  const detail = t
    ? `, last exit code ${t.exitCode ?? '?'}${t.message ? `: ${clipForeign(t.message)}` : ''}`
    : '';
  return { reason, message: `container ${s.name} restarted ${s.restartCount ?? 0} times${detail}` };
}

/**
 * A node that is not Ready (its kubelet stopped reporting, as when the machine died): what it runs is
 * gone, though the Pod's last container statuses still say running. The node's reason is relayed.
 */
function nodeFault(node: KubeObject<Node> | undefined): PodFault | undefined {
  const c = node?.status?.conditions?.find((x) => x.type === 'Ready');
  if (!node || !c || c.status === 'True') return undefined;
  const why = [c.status, c.reason].filter(Boolean).join(', ');
  return {
    reason: relayed(c.reason ?? `Node${c.type}${c.status}`),
    message: `node ${node.metadata.name} is not Ready (${why}${c.message ? `: ${clipForeign(c.message)}` : ''}): the member’s objects are lost, and the leader lists its segment until its client TTL ends`,
  };
}

/**
 * `role` prefixes the crash-loop reasons: LeaderCrashLooping, MemberCrashLooping, MemberInitCrashLooping.
 * `node`, the Pod's node, when known: a Pod not ready on a node that is not Ready has the node for its fault.
 * `nodes`, the cluster's nodes, when known: an unschedulable Pod's message names the taints that keep it off them.
 */
export function viewPod(
  pod: KubeObject<Pod>,
  role: 'Leader' | 'Member',
  node?: KubeObject<Node>,
  nodes: KubeObject<Node>[] = [],
): PodView {
  const status = pod.status ?? {};
  const ready = status.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
  const view: PodView = {
    name: pod.metadata.name!,
    ready,
    podIP: status.podIP,
    nodeName: pod.spec?.nodeName,
    deleting: Boolean(pod.metadata.deletionTimestamp),
  };
  if (ready) return view;
  const down = nodeFault(node);
  if (down) {
    view.fault = down;
    return view;
  }
  const scheduled = status.conditions?.find((c) => c.type === 'PodScheduled');
  if (scheduled?.status === 'False' && scheduled.reason === BackendReason.Unschedulable) {
    view.fault = {
      reason: role === 'Leader' ? BackendReason.LeaderUnschedulable : BackendReason.Unschedulable,
      message: unschedulableText(
        scheduled.message ?? 'no node fits the Pod',
        pod.spec?.tolerations,
        nodes,
        role === 'Leader' ? 'add spec.connection.managed.leader.tolerations' : undefined,
      ),
    };
    return view;
  }
  for (const s of status.initContainerStatuses ?? []) {
    const waiting = s.state?.waiting;
    if (!waiting?.reason || progress.has(waiting.reason)) continue;
    view.fault =
      waiting.reason === 'CrashLoopBackOff'
        ? crashFault(s, `${role}InitCrashLooping`)
        : {
            reason: relayed(waiting.reason),
            message: clipForeign(`init container ${s.name}: ${waiting.message ?? waiting.reason}`),
          };
    return view;
  }
  for (const s of status.containerStatuses ?? []) {
    const waiting = s.state?.waiting;
    if (!waiting?.reason || progress.has(waiting.reason)) continue;
    view.fault =
      waiting.reason === 'CrashLoopBackOff'
        ? crashFault(s, `${role}CrashLooping`)
        : { reason: relayed(waiting.reason), message: clipForeign(waiting.message ?? waiting.reason) };
    return view;
  }
  // Between two crashes a container runs briefly; it is crash looping all the same.
  const looping = status.containerStatuses?.find(
    (s) => (s.restartCount ?? 0) >= crashLoopRestarts && s.lastState?.terminated,
  );
  if (looping) view.fault = crashFault(looping, `${role}CrashLooping`);
  return view;
}

const crashLoopRestarts = 2;
