// Hand-built backends, pools, Bindings and master reports, typed as the API declares them, for the unit,
// integration and bench code alike: the walkthrough's objects (one DRAM backend, one pool, Bindings in
// team namespaces) by default, the names and figures a test needs by argument.
import type { MemberGroup } from '../../src/api/kvcache-backend.ts';
import type { Condition } from '../../src/api/schema.ts';
import type { KVCacheBackend, KVCachePool, KVCachePoolBinding } from '../../src/api/types.ts';
import type { MasterReport } from '../../src/controllers/pool/status.ts';
import type { TenantFigures } from '../../src/store/tenant-metrics.ts';
import type { DecidedCondition } from '../../src/vocabulary/conditions.ts';
import type { MooncakeStore } from './mooncake-store.ts';

export const deletedAt = '2025-01-01T00:00:00Z';
export const clientEndpoint = 'mooncake-dram-leader.gpustack-system.svc:50051';

export const group = (over: Partial<MemberGroup> = {}): MemberGroup => ({
  nodeSelector: { 'kubernetes.io/os': 'linux' },
  medium: 'DRAM',
  capacityPerMember: '8Gi',
  ...over,
});

/** A managed backend with one DRAM member group per entry of `groups`. */
export function backend(
  name = 'mooncake-dram',
  opts: {
    groups?: MemberGroup[];
    multiTenancy?: boolean;
    protocol?: 'Auto' | 'TCP' | 'RDMA';
    leaderReplicas?: number;
  } = {},
): KVCacheBackend {
  return {
    apiVersion: 'worker.gpustack.ai/v1',
    kind: 'KVCacheBackend',
    metadata: { name },
    spec: {
      type: 'Mooncake',
      transport: { protocol: opts.protocol ?? 'Auto' },
      connection: {
        managed: {
          leader: { replicas: opts.leaderReplicas ?? 1, multiTenancy: opts.multiTenancy ?? true },
          members: opts.groups ?? [group()],
        },
      },
    },
  };
}

/** Where an external backend's Client and Admin endpoints are: a store started by the test, or none. */
export type StoreAddresses = Pick<MooncakeStore, 'rpcAddress' | 'adminAddress'>;

/** Addresses nothing listens on, for decisions that only read the spec. */
export const exampleStore: StoreAddresses = {
  rpcAddress: 'store.example:50051',
  adminAddress: 'store.example:9003',
};

/** A backend on `store`; `adminAddress` puts something (a proxy) in front of its admin endpoint. */
export function externalBackend(
  name = 'mooncake-ext',
  store: StoreAddresses = exampleStore,
  adminAddress = store.adminAddress,
): KVCacheBackend {
  return {
    apiVersion: 'worker.gpustack.ai/v1',
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
  };
}

export const cond = (type: string, status: Condition['status'], reason: string, message = ''): Condition => ({
  type,
  status,
  reason,
  message,
  lastTransitionTime: '2025-01-01T00:00:00Z',
});

export function pool(
  name = 'shared-dram',
  opts: {
    backend?: string;
    total?: string;
    deleting?: boolean;
    status?: KVCachePool['status'];
  } = {},
): KVCachePool {
  return {
    apiVersion: 'worker.gpustack.ai/v1',
    kind: 'KVCachePool',
    metadata: { name, ...(opts.deleting ? { deletionTimestamp: deletedAt } : {}) },
    spec: { backends: [opts.backend ?? 'mooncake-dram'], quota: { total: opts.total ?? '900Gi' } },
    ...(opts.status ? { status: opts.status } : {}),
  };
}

/** A pool the controller has judged Ready, publishing its client endpoint. */
export function readyPool(
  ledger: Condition = cond('QuotaLedgerAvailable', 'True', 'Available'),
): KVCachePool {
  return pool('shared-dram', { status: { phase: 'Ready', clientEndpoint, conditions: [ledger] } });
}

export interface BindingOptions {
  pool?: string;
  ceiling?: string;
  /** Defaults to `<ns>-<name>`; null leaves the name out, which the store reads as `default`. */
  domain?: string | null;
  blockSize?: number;
  dtype?: string;
  deleting?: boolean;
  annotations?: Record<string, string>;
  status?: KVCachePoolBinding['status'];
}

export function binding(ns: string, name: string, opts: BindingOptions = {}): KVCachePoolBinding {
  const domain = opts.domain === null ? {} : { name: opts.domain ?? `${ns}-${name}` };
  return {
    apiVersion: 'worker.gpustack.ai/v1',
    kind: 'KVCachePoolBinding',
    metadata: {
      namespace: ns,
      name,
      ...(opts.deleting ? { deletionTimestamp: deletedAt } : {}),
      ...(opts.annotations ? { annotations: opts.annotations } : {}),
    },
    spec: {
      poolRef: { name: opts.pool ?? 'shared-dram' },
      quota: { ceiling: opts.ceiling ?? '8Gi' },
      domain: { ...domain, blockSize: opts.blockSize ?? 16, dtype: opts.dtype ?? 'bfloat16' },
    },
    ...(opts.status ? { status: opts.status } : {}),
  };
}

/** Per-tenant figures as tenantFigures() returns them from one scrape. */
export function figures(entries: Record<string, Partial<TenantFigures>>): Map<string, TenantFigures> {
  return new Map(
    Object.entries(entries).map(([tenant, f]) => [tenant, { usageIncludesInFlight: false, ...f }]),
  );
}

/** A master that keeps a ledger, was scraped, and can allocate 900Gi. */
export function report(over: Partial<MasterReport> = {}): MasterReport {
  return {
    ledgerOff: false,
    retained: new Set(),
    figures: figures({}),
    allocatableBytes: 900n * 2n ** 30n,
    clientEndpoint,
    ...over,
  };
}

/** The status and reason of one condition, or undefined when it is absent. */
export function conditionOf(d: { conditions: DecidedCondition[] }, type: string) {
  const c = d.conditions.find((x) => x.type === type);
  return c && { status: c.status, reason: c.reason };
}

export function messageOf(d: { conditions: DecidedCondition[] }, type: string): string {
  return d.conditions.find((x) => x.type === type)?.message ?? '';
}
