// Admission of KVCachePool and KVCachePoolBinding, reading pools and backends from the operator's
// caches (see lookup.ts); a created Binding's siblings are read from the apiserver itself.
import type { KVCachePool, KVCachePoolBinding } from '../api/types.ts';
import type { PoolInformers } from '../context/informers.ts';
import type { OperatorContext } from '../context/operator-context.ts';
import { type AdmissionHandler, allow } from '../kube/webhook-server.ts';
import { workerApiVersion } from '../model/identity.ts';
import type { HookSpec } from './configuration.ts';
import { verdictOf } from './findings.ts';
import { FreshRead } from './fresh-read.ts';
import { findBackend, findPool, judgeConfirmingRefusals } from './lookup.ts';
import { validateBinding, validatePoolCreate } from './pool-binding-rules.ts';

const rule = (resource: string) => [
  {
    apiGroups: ['worker.gpustack.ai'],
    apiVersions: ['v1'],
    operations: ['CREATE', 'UPDATE'],
    resources: [resource],
  },
];
export const poolHook: HookSpec = {
  name: 'kvcachepools.worker.gpustack.ai',
  path: '/validate-kvcachepool',
  rules: rule('kvcachepools'),
  failurePolicy: 'Fail',
};
export const bindingHook: HookSpec = {
  name: 'kvcachepoolbindings.worker.gpustack.ai',
  path: '/validate-kvcachepoolbinding',
  rules: rule('kvcachepoolbindings'),
  failurePolicy: 'Fail',
};

/**
 * Every pool and Binding, read from the apiserver: a domain's uniqueness is judged on create, and the
 * cache may not yet hold a Binding created a moment before. Creates arriving together share a read.
 */
function liveBindings(ctx: OperatorContext) {
  return new FreshRead(() =>
    Promise.all([
      ctx.client.list<KVCachePool>({ apiVersion: workerApiVersion, kind: 'KVCachePool' }),
      ctx.client.list<KVCachePoolBinding>({ apiVersion: workerApiVersion, kind: 'KVCachePoolBinding' }),
    ]),
  );
}

/** Every Binding on a backend's pools, from a live read. */
async function bindingsOnBackend(
  live: ReturnType<typeof liveBindings>,
  backend: string,
): Promise<KVCachePoolBinding[]> {
  const [pools, bindings] = await live.get();
  const onBackend = new Set(
    pools.items.filter((p) => p.spec.backends.includes(backend)).map((p) => p.metadata.name),
  );
  return bindings.items.filter((x) => onBackend.has(x.spec.poolRef.name));
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
  const live = liveBindings(ctx);
  return async (req) => {
    const b = req.object!;
    const old = req.operation === 'UPDATE' ? req.oldObject : undefined;
    // Already read live: a refusal judged again reuses the list instead of reading it twice.
    const read = new Map<string, Promise<KVCachePoolBinding[]>>();
    const siblingsOf = (backend: string) => {
      if (old) return [];
      if (!read.has(backend)) read.set(backend, bindingsOnBackend(live, backend));
      return read.get(backend)!;
    };
    const findings = await judgeConfirmingRefusals(
      async (fresh) => {
        const pool = await findPool(ctx, i, b.spec.poolRef.name, fresh);
        const backendName = pool?.spec.backends[0];
        const backend = backendName ? await findBackend(ctx, i, backendName, fresh) : undefined;
        return validateBinding(b, old, {
          pool,
          backend,
          siblings: backend ? await siblingsOf(backendName!) : [],
          ledgerReason: pool?.status?.conditions?.find((c) => c.type === 'QuotaLedgerAvailable')?.reason,
          dtypeOwned: ctx.settings.bool('model-deployment-kv-cache-dtype-owned'),
        });
      },
      (f) => f.errors.length > 0,
    );
    return verdictOf(findings);
  };
}
