// Taking, keeping and releasing a reuse domain's claim (src/vocabulary/domain-claims.ts) on the apiserver.
// Every write is conditional (create if absent, update or delete at a resourceVersion), so admission on
// any replica and the pool controller may race without two Bindings ever holding one domain.
import type { KVCachePoolBinding } from '../api/types.ts';
import type { KubeClient } from '../kube/client.ts';
import { ApiError } from '../kube/errors.ts';
import {
  type ClaimHolder,
  type ClaimVerdict,
  claimHolderRef,
  claimName,
  type DomainClaim,
  judgeClaim,
  renderClaim,
  takeOverClaim,
} from '../vocabulary/domain-claims.ts';
import { workerApiVersion } from '../vocabulary/identity.ts';

export interface ClaimRequest {
  client: KubeClient;
  /** The operator's namespace, where claims live. */
  namespace: string;
  backend: string;
  domain: string;
  holder: ClaimHolder;
  graceMs: number;
  now?: () => number;
  /** Judge only: write nothing (a dry-run admission). */
  dryRun?: boolean;
}

const claimRef = (namespace: string, name: string) => ({
  apiVersion: 'coordination.k8s.io/v1',
  kind: 'Lease',
  namespace,
  name,
});

const conflicted = (err: unknown) => err instanceof ApiError && (err.isConflict || err.isAlreadyExists);

/** The claim's verdict as read live, with the Binding it names read live too. */
async function judgeLive(r: ClaimRequest, live: DomainClaim, now: number): Promise<ClaimVerdict> {
  const ref = claimHolderRef(live);
  const holder = ref
    ? await r.client.find<KVCachePoolBinding>({
        apiVersion: workerApiVersion,
        kind: 'KVCachePoolBinding',
        ...ref,
      })
    : undefined;
  return judgeClaim(live, r.holder.uid, holder, now, r.graceMs);
}

/**
 * Takes the domain for `holder`: one create when the domain is free. Returns `ours` when the holder has
 * it, otherwise why not. A takeover lost to another writer is judged again on what that writer left.
 */
export async function claimDomain(r: ClaimRequest): Promise<ClaimVerdict> {
  const now = r.now ?? Date.now;
  const name = claimName(r.backend, r.domain);
  for (let attempt = 0; attempt < 3; attempt++) {
    const live = await r.client.find<DomainClaim>(claimRef(r.namespace, name));
    if (!live) {
      if (r.dryRun) return { kind: 'ours' };
      try {
        await r.client.create(renderClaim(r.namespace, r.backend, r.domain, r.holder, now()));
        return { kind: 'ours' };
      } catch (err) {
        if (conflicted(err)) continue;
        throw err;
      }
    }
    const verdict = await judgeLive(r, live, now());
    if (verdict.kind !== 'takeOver') return verdict;
    if (r.dryRun) return { kind: 'ours' };
    try {
      await r.client.replace(takeOverClaim(live, r.holder, now()));
      return { kind: 'ours' };
    } catch (err) {
      if (!conflicted(err) && !(err instanceof ApiError && err.isNotFound)) throw err;
    }
  }
  return { kind: 'pending', lapsesInMs: r.graceMs };
}

/** Admission's claim: the create comes first, as a free domain is the common case (one request). */
export async function claimDomainOnCreate(r: ClaimRequest): Promise<ClaimVerdict> {
  if (r.dryRun) return claimDomain(r);
  const now = r.now ?? Date.now;
  try {
    await r.client.create(renderClaim(r.namespace, r.backend, r.domain, r.holder, now()));
    return { kind: 'ours' };
  } catch (err) {
    if (!conflicted(err)) throw err;
  }
  return claimDomain(r);
}

/**
 * Releases a deleted Binding's claim: deleted only while the Binding still holds it, at the
 * resourceVersion read, so a claim taken over meanwhile stays with its new holder.
 */
export async function releaseDomain(
  client: KubeClient,
  namespace: string,
  backend: string,
  domain: string,
  uid: string,
): Promise<void> {
  const ref = claimRef(namespace, claimName(backend, domain));
  const live = await client.find<DomainClaim>(ref);
  if (!live || live.spec?.holderIdentity !== uid) return;
  try {
    await client.delete(ref, {
      preconditions: { uid: live.metadata.uid, resourceVersion: live.metadata.resourceVersion },
    });
  } catch (err) {
    if (!(err instanceof ApiError && err.isConflict)) throw err;
  }
}
