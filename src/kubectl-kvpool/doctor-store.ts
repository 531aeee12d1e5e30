// The doctor's rows about the store itself: the leader, the members and the disk tier. Pure.
import { conditionOf } from '../api/conditions.ts';
import { BackendCondition, BackendReason as R } from '../api/kvcache-backend-conditions.ts';
import type { KVCacheBackend } from '../api/types.ts';
import { viewPod } from '../controllers/backend/pod-view.ts';
import { componentLabel, instanceLabel, leaderComponent } from '../vocabulary/store-objects.ts';
import { type Check, type Finding, said } from './finding.ts';
import { podFault } from './pod-fault.ts';
import type { Pod, Snapshot } from './snapshot.ts';

const pullFailures = new Set(['ErrImagePull', 'ImagePullBackOff', 'InvalidImageName', 'ErrImageNeverPull']);
const starting = new Set<string>([R.LeaderStarting, 'ContainerCreating', 'PodInitializing']);

const backendObject = (b: KVCacheBackend) => `KVCacheBackend/${b.metadata.name}`;

function podsOf(s: Snapshot, b: KVCacheBackend, member: boolean): Pod[] {
  return s.storePods.filter(
    (p) =>
      p.metadata.labels?.[instanceLabel] === b.metadata.name &&
      !p.metadata.deletionTimestamp &&
      (member
        ? p.metadata.labels?.[componentLabel]?.startsWith('member-')
        : p.metadata.labels?.[componentLabel] === leaderComponent),
  );
}

/** Pods that are not ready, in words: `pod on node: Reason: message`. */
function podEvidence(s: Snapshot, pods: Pod[], role: 'Leader' | 'Member'): string[] {
  return pods
    .map((p) => podFault(s, p, role))
    .filter((v) => !v.ready)
    .map(
      (v) =>
        `Pod ${v.name}${v.nodeName ? ` on ${v.nodeName}` : ''}: ${v.fault ? `${v.fault.reason}: ${v.fault.message}` : 'not ready'}`,
    );
}

function leaderFix(b: KVCacheBackend, reason: string, namespace: string, pod?: string): string {
  const describe = `kubectl -n ${namespace} describe pod ${pod ?? `-l ${instanceLabel}=${b.metadata.name},${componentLabel}=leader`}`;
  if (pullFailures.has(reason))
    return `the leader's image cannot be pulled: correct spec.image (or the kv-cache-backend-image Setting when spec.image is unset), or give the registry's credentials in spec.imagePullSecrets; ${describe} shows the pull error`;
  if (reason === R.LeaderUnschedulable) return `no node can take the leader Pod: ${describe} says why`;
  if (reason === R.LeaderCrashLooping)
    return `the leader keeps exiting: read kubectl -n ${namespace} logs ${pod ?? 'the leader Pod'} --previous. An image without the Lease election backend cannot lead (use the project's store image)`;
  if (reason === R.ServicePlaneNotActive)
    return 'the master answers but does not serve: it has not won or has lost the Lease; read ElectionObserved and the leader’s log';
  if (reason === R.LeaderUnreachable || reason === R.NoAdminEndpoint)
    return b.spec.connection.external
      ? "the store's Admin endpoint does not answer: check spec.connection.external.endpoints and that the store runs"
      : `the leader Pod is ready but its admin port does not answer: ${describe}`;
  if (starting.has(reason)) return `the leader is still starting; if it stays so, ${describe}`;
  return `${describe}, and kubectl describe kvcb ${b.metadata.name}`;
}

const leaderUnavailable: Check = {
  id: 'leader-unavailable',
  title: `Leader unavailable (${BackendCondition.LeaderAvailable}=False, ${BackendCondition.ElectionObserved}=False)`,
  run(s) {
    const out: Finding[] = [];
    for (const b of s.backends) {
      const c = conditionOf(b, BackendCondition.LeaderAvailable);
      const pods = podsOf(s, b, false);
      const ns = pods[0]?.metadata.namespace ?? 'gpustack-system';
      const stuck = pods.map((p) => viewPod(p, 'Leader')).find((v) => v.fault);
      if (c && c.status !== 'True') {
        out.push({
          object: backendObject(b),
          severity: starting.has(c.reason) ? 'warning' : 'error',
          summary: `the leader does not serve (phase ${b.status?.phase ?? 'unknown'})`,
          evidence: [said(c), ...podEvidence(s, pods, 'Leader')],
          fix: leaderFix(b, stuck?.fault?.reason ?? c.reason, ns, stuck?.name),
        });
      }
      const e = conditionOf(b, BackendCondition.ElectionObserved);
      if (e?.status === 'False')
        out.push({
          object: backendObject(b),
          severity: 'error',
          summary: 'a leader replica is ready but the Lease names no holder',
          evidence: [said(e)],
          fix: `check that the image carries the Lease election backend and that RoleBinding ${b.metadata.name}-leader in ${ns} exists; the first campaign takes a few seconds`,
        });
    }
    return out;
  },
};

function memberFix(b: KVCacheBackend, reason: string, message: string, ns: string): string {
  const pods = `kubectl -n ${ns} get pods -l ${instanceLabel}=${b.metadata.name}`;
  if (reason === R.FailedMount || /hostPath type check failed/.test(message))
    return 'a member cannot mount its tier directory: see the tier-directory row';
  if (/no write permission on directory/.test(message))
    return 'the member cannot write its tier directory: see the tier-directory row';
  if (/tier=(refused|unremovable)/.test(message))
    return 'the tier directory holds files this backend did not write, so the member stays stopped: see the preexisting-tier-content row';
  if (reason === R.MemberInitCrashLooping)
    return 'the directory-survey init container restarts: the member image needs a shell (sh -c); the condition gives its exit code and message';
  if (reason === R.MemberCrashLooping)
    return `the member keeps exiting: read kubectl -n ${ns} logs <pod> --previous; the node must have capacityPerMember of memory free (it is the Pod's memory request)`;
  if (reason === R.Unschedulable)
    return `no node can take a member Pod: the node lacks capacityPerMember of memory, or a device plugin the transport needs; ${pods} -o wide, then describe the Pending one`;
  if (reason === R.SegmentsShort)
    return 'ready members without a segment on the leader: they register again after a leader restart (about 30 s); if it lasts, read their logs';
  return `no member has mounted a segment: check that spec members' nodeSelector matches nodes, then ${pods}`;
}

const memberShortfall: Check = {
  id: 'member-shortfall',
  title: `Member shortfall (${BackendCondition.MembersMounted}=False: ${R.SegmentsShort}, ${R.NoSegments}, a stuck member)`,
  run(s) {
    const out: Finding[] = [];
    for (const b of s.backends) {
      const c = conditionOf(b, BackendCondition.MembersMounted);
      // While the leader does not serve, MembersMounted repeats its reason: the leader row says it.
      if (c?.status !== 'False' || conditionOf(b, BackendCondition.LeaderAvailable)?.status !== 'True')
        continue;
      const pods = podsOf(s, b, true);
      const ns = pods[0]?.metadata.namespace ?? 'gpustack-system';
      out.push({
        object: backendObject(b),
        severity: 'error',
        summary: `members are missing from the store (capacity ${b.status?.capacity?.total ?? 'not reported'})`,
        evidence: [said(c), ...podEvidence(s, pods, 'Member')],
        fix: memberFix(b, c.reason, c.message, ns),
      });
    }
    return out;
  },
};

/** The tier path of a backend's disk group, if it has one. */
function tierPath(b: KVCacheBackend): string | undefined {
  return b.spec.connection.managed?.members.find((g) => g.localDisks?.length)?.localDisks?.[0]?.path;
}

const tierDirectory: Check = {
  id: 'tier-directory',
  title: `Tier directory missing or unwritable (${R.FailedMount}, no write permission)`,
  run(s) {
    const out: Finding[] = [];
    for (const b of s.backends) {
      const path = tierPath(b);
      if (!path) continue;
      const pods = podsOf(s, b, true);
      const names = new Map(pods.map((p) => [p.metadata.name!, p.spec?.nodeName ?? '?']));
      const missing = s.events.filter(
        (e) =>
          e.reason === R.FailedMount &&
          names.has(e.involvedObject.name!) &&
          !pods
            .find((p) => p.metadata.name === e.involvedObject.name)
            ?.status?.conditions?.some((x) => x.type === 'Ready' && x.status === 'True'),
      );
      const missingNodes = [...new Set(missing.map((e) => names.get(e.involvedObject.name!)!))].sort();
      if (missingNodes.length)
        out.push({
          object: backendObject(b),
          severity: 'error',
          summary: `${path} does not exist on ${missingNodes.join(', ')}`,
          evidence: missing.map(
            (e) =>
              `Event FailedMount on Pod ${e.involvedObject.name} (${names.get(e.involvedObject.name!)}): ${e.message}`,
          ),
          fix: `create it on ${missingNodes.length === 1 ? 'that node' : 'each of those nodes'}, owned by the store image's user (65532 for the project's image): install -d -o 65532 -g 0 -m 0750 ${path}`,
        });
      const unwritable = pods
        .map((p) => viewPod(p, 'Member'))
        .filter((v) => !v.ready && /no write permission on directory/.test(v.fault?.message ?? ''));
      const c = conditionOf(b, BackendCondition.MembersMounted);
      if (
        unwritable.length ||
        (c?.status === 'False' && /no write permission on directory/.test(c.message))
      ) {
        const nodes = unwritable.map((v) => v.nodeName ?? '?').sort();
        out.push({
          object: backendObject(b),
          severity: 'error',
          summary: `the store's user cannot write ${path}${nodes.length ? ` on ${nodes.join(', ')}` : ''}`,
          evidence: [
            ...(c?.status === 'False' ? [said(c)] : []),
            ...unwritable.map(
              (v) => `Pod ${v.name} on ${v.nodeName}: ${v.fault!.reason}: ${v.fault!.message}`,
            ),
          ],
          fix: `give the directory to the image's user (65532 for the project's image) on those nodes: install -d -o 65532 -g 0 -m 0750 ${path}`,
        });
      }
    }
    return out;
  },
};

const preexistingContent: Check = {
  id: 'preexisting-tier-content',
  title: `Tier directory held content before the backend (${BackendCondition.TierWasEmpty}=False)`,
  run(s) {
    return s.backends.flatMap((b): Finding[] => {
      const c = conditionOf(b, BackendCondition.TierWasEmpty);
      if (c?.status !== 'False') return [];
      const dir = tierPath(b) ?? 'the tier directory';
      if (c.reason === R.ForeignContentRefused)
        return [
          {
            object: backendObject(b),
            severity: 'error',
            summary: `${dir} holds files this backend did not write: members there stay stopped so the store never serves them`,
            evidence: [said(c)],
            fix: 'empty the directory on the nodes named, or set foreignContent: Remove on the tier (the message names the field)',
          },
        ];
      return [
        {
          object: backendObject(b),
          severity: 'warning',
          summary:
            c.reason === R.ForeignContentRemoved
              ? `${dir} held files this backend did not write; members removed them before the store started`
              : `${dir} held files when the backend started (an earlier backend's data can answer a new key)`,
          evidence: [said(c)],
          fix:
            c.reason === R.ForeignContentRemoved
              ? 'nothing to do: foreignContent: Remove asked for it'
              : 'nothing was removed: empty the directory on the nodes named yourself; cleanAfterDelete: true empties it only when this backend is deleted',
        },
      ];
    });
  },
};

export const storeChecks: Check[] = [leaderUnavailable, memberShortfall, tierDirectory, preexistingContent];
