// Writes a controller makes, each skipped when it would change nothing, so an idle pass writes nothing.

import type { StatusOf, StatusWritten } from '../api/types.ts';
import { canonicalJson, sha256Hex } from '../kube/canonical-json.ts';
import { type KubeClient, refOf } from '../kube/client.ts';
import type { Clock } from '../kube/clock.ts';
import { eventLoopYielder } from '../kube/event-loop.ts';
import type { KubeObject } from '../kube/object.ts';
import { type ChildConflict, type ClaimOptions, claimChild } from '../vocabulary/child-ownership.ts';
import { withDisplayFigures } from '../vocabulary/display-figures.ts';
import { fieldManagers, finalizer } from '../vocabulary/identity.ts';

export const desiredHashAnnotation = 'kvpool.gpustack.ai/desired-hash';

/**
 * Server-side applies a child unless the live object already carries the hash of exactly this intent.
 * Drift in fields this operator owns is repaired whenever the intent changes, and on operator start
 * (the first pass applies everything it renders).
 */
export async function applyChild(
  client: KubeClient,
  desired: KubeObject,
  live: KubeObject | undefined,
  appliedOnce: Set<string>,
): Promise<boolean> {
  const hash = sha256Hex(desired);
  const key = `${desired.kind}/${desired.metadata.namespace}/${desired.metadata.name}`;
  if (live?.metadata.annotations?.[desiredHashAnnotation] === hash && appliedOnce.has(key)) return false;
  const annotated = {
    ...desired,
    metadata: {
      ...desired.metadata,
      annotations: { ...desired.metadata.annotations, [desiredHashAnnotation]: hash },
    },
  };
  await client.apply(annotated, { fieldManager: fieldManagers.controller });
  appliedOnce.add(key);
  return true;
}

/**
 * The object holding a child's name (from the cache when it holds it, else read live: a child created
 * a moment ago, or an object kvpool never labelled) and whether kvpool may apply over it: only when it
 * controls it (child-ownership.ts).
 */
export async function claimLiveChild<T extends KubeObject>(
  client: KubeClient,
  desired: KubeObject,
  cached: T | undefined,
  ownerUid: string | undefined,
  options?: ClaimOptions,
): Promise<{ live?: T; conflict?: ChildConflict }> {
  const live = cached ?? (await client.find<T>(refOf(desired)));
  const claim = claimChild(live, ownerUid, options);
  return claim.kind === 'foreign' ? { conflict: claim.conflict } : { live };
}

/** applyChild for a child of the owner with `ownerUid`; the conflict, untouched, when it is not its own. */
export async function applyOwnedChild(
  client: KubeClient,
  desired: KubeObject,
  cached: KubeObject | undefined,
  appliedOnce: Set<string>,
  ownerUid: string | undefined,
): Promise<ChildConflict | undefined> {
  const { live, conflict } = await claimLiveChild(client, desired, cached, ownerUid);
  if (!conflict) await applyChild(client, desired, live, appliedOnce);
  return conflict;
}

export async function ensureFinalizer(client: KubeClient, obj: KubeObject): Promise<void> {
  if (obj.metadata.finalizers?.includes(finalizer)) return;
  await client.jsonPatch(refOf(obj), [
    { op: 'test', path: '/metadata/resourceVersion', value: obj.metadata.resourceVersion },
    obj.metadata.finalizers
      ? { op: 'add', path: '/metadata/finalizers/-', value: finalizer }
      : { op: 'add', path: '/metadata/finalizers', value: [finalizer] },
  ]);
}

export async function removeFinalizer(client: KubeClient, obj: KubeObject): Promise<void> {
  const i = obj.metadata.finalizers?.indexOf(finalizer) ?? -1;
  if (i < 0) return;
  await client.jsonPatch(refOf(obj), [
    { op: 'test', path: `/metadata/finalizers/${i}`, value: finalizer },
    { op: 'remove', path: `/metadata/finalizers/${i}` },
  ]);
}

/**
 * Applies the status this controller owns (all of it) unless it already reads exactly so; its byte
 * figures also go into status.display, rounded for the printer columns.
 */
export async function applyStatus<O extends StatusWritten>(
  client: KubeClient,
  obj: O,
  status: StatusOf<O>,
): Promise<boolean> {
  // The JSON round trip drops fields left undefined, as the API server would.
  const clean = withDisplayFigures<O>(obj.kind, JSON.parse(JSON.stringify(status)) as StatusOf<O>);
  if (canonicalJson(obj.status ?? {}) === canonicalJson(clean)) return false;
  const { apiVersion, kind } = obj;
  const metadata = { name: obj.metadata.name, namespace: obj.metadata.namespace };
  const intent = { apiVersion, kind, metadata, status: clean };
  await client.apply(intent, {
    fieldManager: fieldManagers.status,
    subresource: 'status',
  });
  return true;
}

/**
 * Runs independent writes of one pass `width` at a time (a pool's 1,500 Bindings one after another
 * would take seconds). Every write is attempted; the first failure is thrown once all have settled.
 * The turns it gives the event loop are timed on `clock` (the real one unless a test steps its own).
 */
export async function eachWrite<T>(
  items: readonly T[],
  work: (item: T) => Promise<unknown>,
  width = 16,
  clock?: Pick<Clock, 'now'>,
) {
  let next = 0;
  let failure: { err: unknown } | undefined;
  // Most items write nothing and settle at once: without turns, admission would wait for the whole loop.
  const yieldTurn = eventLoopYielder(clock);
  const worker = async () => {
    while (next < items.length) {
      await yieldTurn();
      if (next >= items.length) break;
      const item = items[next++]!;
      try {
        await work(item);
      } catch (err) {
        failure ??= { err };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(width, items.length) }, worker));
  if (failure) throw failure.err;
}
