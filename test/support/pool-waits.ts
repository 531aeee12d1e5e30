// Waits on pools and Bindings, and reads of a master's tenant ledger, shared by the pool and Binding tests.
// The objects themselves come from test/builders/.
import type { KVCachePool, KVCachePoolBinding } from '../../src/api/types.ts';
import type { KubeClient } from '../../src/kube/client.ts';
import { v1 } from '../builders/index.ts';
import type { MooncakeStore } from './mooncake-store.ts';
import { waitFor } from './wait.ts';

export function condition(
  obj: { status?: { conditions?: { type: string; status: string; reason: string; message: string }[] } },
  type: string,
) {
  return obj.status?.conditions?.find((c) => c.type === type);
}

export async function untilBinding(
  client: KubeClient,
  namespace: string,
  name: string,
  what: string,
  test: (b: KVCachePoolBinding) => boolean,
  timeoutMs = 10_000,
): Promise<KVCachePoolBinding> {
  return waitFor(
    () => client.get<KVCachePoolBinding>({ apiVersion: v1, kind: 'KVCachePoolBinding', namespace, name }),
    { what: `Binding ${namespace}/${name}: ${what}`, until: test, timeoutMs, intervalMs: 50 },
  );
}

export async function untilPool(
  client: KubeClient,
  name: string,
  what: string,
  test: (p: KVCachePool) => boolean,
  timeoutMs = 10_000,
) {
  return waitFor(() => client.get<KVCachePool>({ apiVersion: v1, kind: 'KVCachePool', name }), {
    what: `pool ${name}: ${what}`,
    until: test,
    timeoutMs,
    intervalMs: 50,
  });
}

/** A tenant's series on the master's /metrics, or undefined when absent. */
export async function tenantMetric(
  store: MooncakeStore,
  family: string,
  tenant: string,
): Promise<number | undefined> {
  const m = (await store.metrics()).match(
    new RegExp(`^mooncake_tenant_quota_${family}\\{tenant_id="${tenant}"\\} (\\S+)`, 'm'),
  );
  return m ? Number(m[1]) : undefined;
}

export async function ledgerTenants(store: MooncakeStore): Promise<string[]> {
  const res = (await (await fetch(`${store.adminUrl}/api/v1/tenant_quotas`)).json()) as {
    data: { tenant_id: string }[];
  };
  return res.data.map((e) => e.tenant_id).sort();
}
