// A store Pod as the status and the doctor describe it: its fault from its own state, or — for a
// mount the kubelet cannot make, which keeps the Pod creating — from its FailedMount Warning event.
import { BackendReason } from '../api/kvcache-backend-conditions.ts';
import { type PodView, viewPod } from '../controllers/backend/pod-view.ts';
import type { Pod, Snapshot } from './snapshot.ts';

export function podFault(s: Snapshot, pod: Pod, role: 'Leader' | 'Member'): PodView {
  const v = viewPod(pod, role);
  if (v.ready || v.fault) return v;
  const failed = s.events.filter(
    (e) => e.reason === BackendReason.FailedMount && e.involvedObject.name === pod.metadata.name,
  );
  const last = failed.at(-1);
  return last?.message ? { ...v, fault: { reason: BackendReason.FailedMount, message: last.message } } : v;
}
