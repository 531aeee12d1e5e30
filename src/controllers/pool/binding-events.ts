// The Events a pool pass records on a deleted Binding: its domain's objects purged, or its release held.
import { BindingReleasableReason } from '../../api/kvcache-pool-binding.ts';
import { BindingCondition } from '../../api/kvcache-pool-binding-conditions.ts';
import type { KVCachePoolBinding } from '../../api/types.ts';
import type { EventRecorder } from '../../kube/events.ts';
import { domainOf } from '../../vocabulary/domains.ts';
import type { Decision } from './status.ts';

/** A Normal event for each pass that removed objects of a deleted Binding's domain. */
export async function notePurge(
  events: EventRecorder,
  b: KVCachePoolBinding,
  backend: string,
  removed: number,
) {
  await events.record(
    b,
    'Normal',
    'KVCacheDomainPurged',
    `removed ${removed} objects of domain ${domainOf(b)} from backend ${backend}'s store, as the Binding's kvcache.gpustack.ai/purge-on-delete asked; that cached KV is recomputed if the domain is used again`,
  );
}

/** One Warning event when a deleted Binding is first kept for the data its domain holds. */
export async function noteNotReleased(events: EventRecorder, b: KVCachePoolBinding, d: Decision<unknown>) {
  const R = BindingReleasableReason;
  const now = d.conditions.find((c) => c.type === BindingCondition.Releasable);
  const was = b.status?.conditions?.find((c) => c.type === BindingCondition.Releasable)?.reason;
  if (!now || was === now.reason) return;
  if (now.reason !== R.LedgerNotReleased && now.reason !== R.PurgeUnsafeWithDiskTier) return;
  await events.record(b, 'Warning', 'KVCacheBindingNotReleased', now.message);
}
