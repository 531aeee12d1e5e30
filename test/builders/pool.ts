// KVCachePools: the walkthrough's `shared-dram` on `mooncake-dram` by default, the names and figures a
// test needs by argument.
import type { Condition } from '../../src/api/schema.ts';
import type { KVCachePool } from '../../src/api/types.ts';
import { deletedAt, v1 } from './api.ts';
import { cond } from './conditions.ts';

export const clientEndpoint = 'mooncake-dram-leader.gpustack-system.svc:50051';

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
    apiVersion: v1,
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
