// The pool controller's part in domain claims (docs/decisions/0040-binding-domain-claims.md): every
// Binding it sees holds its domain's claim (Bindings admitted before claims existed, or while their
// pool did not), and a deleted Binding's claim goes before its finalizer does.

import type { KVCachePoolBinding } from '../../api/types.ts';
import { log } from '../../kube/log.ts';
import { eachWrite, removeFinalizer } from '../../operator-io/apply.ts';
import { claimDomain, releaseDomain } from '../../operator-io/domain-claims.ts';
import type { PoolInformers } from '../../operator-io/informers.ts';
import type { OperatorContext } from '../../operator-io/operator-context.ts';
import { claimName, defaultClaimGraceMs } from '../../vocabulary/domain-claims.ts';
import { domainOf } from '../../vocabulary/domains.ts';
import { workerApiVersion } from '../../vocabulary/identity.ts';

/** Claims each live Binding's domain unless the cache shows it holds the claim already (an idle pass reads only). */
export async function ensureClaims(
  ctx: OperatorContext,
  informers: PoolInformers,
  backend: string,
  bindings: KVCachePoolBinding[],
): Promise<void> {
  const missing = bindings.filter((b) => {
    if (b.metadata.deletionTimestamp) return false;
    const cached = informers.leases.get(claimName(backend, domainOf(b)), ctx.namespace);
    return cached?.spec?.holderIdentity !== b.metadata.uid;
  });
  await eachWrite(missing, async (b) => {
    // The cache may lag a pass that already released this Binding: claim only for one that exists.
    const live = await ctx.client.find<KVCachePoolBinding>({
      apiVersion: workerApiVersion,
      kind: 'KVCachePoolBinding',
      namespace: b.metadata.namespace,
      name: b.metadata.name!,
    });
    if (!live || live.metadata.uid !== b.metadata.uid || live.metadata.deletionTimestamp) return;
    const verdict = await claimDomain({
      client: ctx.client,
      namespace: ctx.namespace,
      backend,
      domain: domainOf(b),
      holder: { namespace: b.metadata.namespace!, name: b.metadata.name!, uid: b.metadata.uid! },
      graceMs: ctx.domainClaimGraceMs ?? defaultClaimGraceMs,
    });
    if (verdict.kind !== 'ours')
      log.warn(
        {
          kind: 'KVCachePoolBinding',
          namespace: b.metadata.namespace,
          name: b.metadata.name,
          backend,
          domain: domainOf(b),
          verdict: verdict.kind,
        },
        'the domain of this Binding is claimed by another; admission refuses it to new Bindings only',
      );
  });
}

/** Removes a released Binding's finalizer, its domain's claim first. */
export async function releaseClaimAndFinalizer(
  ctx: OperatorContext,
  backend: string,
  b: KVCachePoolBinding,
): Promise<void> {
  await releaseDomain(ctx.client, ctx.namespace, backend, domainOf(b), b.metadata.uid!);
  await removeFinalizer(ctx.client, b);
}

/**
 * Releases the claim of a Binding deleted before it had a finalizer (it never reaches a pass): without
 * this its domain would stay taken for the grace. A Binding released by a pass has no claim left.
 */
export function releaseClaimsOfDeleted(ctx: OperatorContext, informers: PoolInformers): void {
  informers.bindings.on((event, b) => {
    if (event !== 'delete') return;
    const backend = informers.pools.get(b.spec.poolRef.name)?.spec.backends[0];
    if (!backend || !b.metadata.uid) return;
    // A standby's writes are refused (not its term): the leader's informer sees the same event.
    releaseDomain(ctx.client, ctx.namespace, backend, domainOf(b), b.metadata.uid).catch((err: unknown) =>
      log.debug(
        {
          kind: 'KVCachePoolBinding',
          namespace: b.metadata.namespace,
          name: b.metadata.name,
          err: String(err),
        },
        'claim not released',
      ),
    );
  });
}
