// Builders and waits shared by the pool and Binding tests.
import type { KVCachePool, KVCachePoolBinding } from '../../src/api/types.ts';
import type { KubeClient } from '../../src/kube/client.ts';
import type { KubeObject } from '../../src/kube/object.ts';
import type { MooncakeStore } from './mooncake-store.ts';
import { waitFor } from './wait.ts';

export const v1 = 'worker.gpustack.ai/v1';

/** A backend on `store`; `adminAddress` puts something (a proxy) in front of its admin endpoint. */
export function externalBackend(
  name: string,
  store: Pick<MooncakeStore, 'rpcAddress' | 'adminAddress'>,
  adminAddress = store.adminAddress,
): KubeObject {
  return {
    apiVersion: v1,
    kind: 'KVCacheBackend',
    metadata: { name },
    spec: {
      connection: {
        external: {
          endpoints: [
            { name: 'Client', address: store.rpcAddress },
            { name: 'Admin', address: adminAddress },
          ],
        },
      },
    },
  } as KubeObject;
}

export function pool(name: string, backend: string, total: string): KubeObject {
  return {
    apiVersion: v1,
    kind: 'KVCachePool',
    metadata: { name },
    spec: { backends: [backend], quota: { total } },
  } as KubeObject;
}

export function binding(
  namespace: string,
  name: string,
  poolName: string,
  ceiling: string,
  domain: Record<string, unknown>,
): KubeObject {
  return {
    apiVersion: v1,
    kind: 'KVCachePoolBinding',
    metadata: { name, namespace },
    spec: {
      poolRef: { name: poolName },
      quota: { ceiling },
      domain: { blockSize: 16, dtype: 'bfloat16', ...domain },
    },
  } as KubeObject;
}

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
