// Admission of KVCachePool and KVCachePoolBinding, reading pools and backends from the operator's
// caches (see lookup.ts); a created Binding's domain is claimed on the apiserver (domain-claims.ts).
import { conditionOf } from '../api/conditions.ts';
import { PoolCondition } from '../api/kvcache-pool-conditions.ts';
import type { KVCachePool, KVCachePoolBinding } from '../api/types.ts';
import { type AdmissionHandler, allow } from '../kube/webhook-server.ts';
import { claimDomainOnCreate } from '../operator-io/domain-claims.ts';
import { byBackend, byPool, type PoolInformers } from '../operator-io/informers.ts';
import type { OperatorContext } from '../operator-io/operator-context.ts';
import { defaultClaimGraceMs } from '../vocabulary/domain-claims.ts';
import { domainOf } from '../vocabulary/domains.ts';
import type { HookSpec } from './configuration.ts';
import { verdictOf } from './findings.ts';
import { findBackend, findPool, judgeConfirmingRefusals } from './lookup.ts';
import { claimRefusal, validateBinding, validatePoolCreate } from './pool-binding-rules.ts';

const rule = (resource: string, operations: string[]) => [
  { apiGroups: ['worker.gpustack.ai'], apiVersions: ['v1'], operations, resources: [resource] },
];
// The apiserver calls a hook only for what it could refuse: every update of a pool is admitted (its
// spec rules are the CRD's), and an update of a Binding is judged only when it moves the ceiling. The
// operator's own finalizer and label writes, one or two per Binding created, then cost no call.
export const poolHook: HookSpec = {
  name: 'kvcachepools.worker.gpustack.ai',
  path: '/validate-kvcachepool',
  rules: rule('kvcachepools', ['CREATE']),
  failurePolicy: 'Fail',
};
export const bindingHook: HookSpec = {
  name: 'kvcachepoolbindings.worker.gpustack.ai',
  path: '/validate-kvcachepoolbinding',
  rules: rule('kvcachepoolbindings', ['CREATE', 'UPDATE']),
  failurePolicy: 'Fail',
  // A create claims its domain (a Lease); a dry run only reads.
  sideEffects: 'NoneOnDryRun',
  matchConditions: [
    {
      name: 'create-or-ceiling-moved',
      // string(): a ceiling is an integer or a quantity string, and the rules compare them as written.
      expression:
        "request.operation == 'CREATE' || string(object.spec.quota.ceiling) != string(oldObject.spec.quota.ceiling)",
    },
  ],
};

/**
 * Domains other Bindings on a backend hold, from the cache (a few suffice for the rules that need
 * them): uniqueness itself is the claim's, which the apiserver decides.
 */
function otherDomains(i: PoolInformers, backend: string, b: KVCachePoolBinding): string[] {
  const own = domainOf(b);
  const found = new Set<string>();
  for (const p of i.pools.byIndex(byBackend, backend)) {
    for (const x of i.bindings.byIndex(byPool, p.metadata.name!)) {
      if (x.metadata.uid === b.metadata.uid || x.metadata.deletionTimestamp) continue;
      const d = domainOf(x);
      if (d !== own) found.add(d);
      if (found.size >= 3) return [...found];
    }
  }
  return [...found];
}

export function poolAdmission(ctx: OperatorContext, i: PoolInformers): AdmissionHandler<KVCachePool> {
  return async (req) => {
    if (req.operation !== 'CREATE') return allow();
    const pool = req.object!;
    return verdictOf(validatePoolCreate(pool, await findBackend(ctx, i, pool.spec.backends[0]!)));
  };
}

export function bindingAdmission(
  ctx: OperatorContext,
  i: PoolInformers,
): AdmissionHandler<KVCachePoolBinding> {
  const graceMs = ctx.domainClaimGraceMs ?? defaultClaimGraceMs;
  return async (req) => {
    const b = req.object!;
    const old = req.operation === 'UPDATE' ? req.oldObject : undefined;
    let backendName: string | undefined;
    const findings = await judgeConfirmingRefusals(
      async (fresh) => {
        const pool = await findPool(ctx, i, b.spec.poolRef.name, fresh);
        backendName = pool?.spec.backends[0];
        const backend = backendName ? await findBackend(ctx, i, backendName, fresh) : undefined;
        if (!backend) backendName = undefined;
        return validateBinding(b, old, {
          pool,
          backend,
          otherDomains: backend && !old ? otherDomains(i, backendName!, b) : [],
          ledgerReason: conditionOf(pool, PoolCondition.QuotaLedgerAvailable)?.reason,
          dtypeOwned: ctx.settings.bool('model-deployment-kv-cache-dtype-owned'),
        });
      },
      (f) => f.errors.length > 0,
    );
    // The domain is taken last, once nothing else refuses: spec.domain and the pool's backend are
    // immutable, so only a create claims.
    if (!old && backendName && findings.errors.length === 0) {
      const verdict = await claimDomainOnCreate({
        client: ctx.admissionClient ?? ctx.client,
        namespace: ctx.namespace,
        backend: backendName,
        domain: domainOf(b),
        holder: { namespace: b.metadata.namespace!, name: b.metadata.name!, uid: b.metadata.uid! },
        graceMs,
        dryRun: req.dryRun === true,
      });
      const refusal = claimRefusal(b, backendName, verdict, graceMs);
      if (refusal) findings.errors.push(refusal);
    }
    return verdictOf(findings);
  };
}
