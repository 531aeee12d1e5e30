// The conditions of a KVCachePool: each type with the reasons it may carry.
import { conditionReasons, conditionTypes } from './condition-table.ts';

export const poolConditions = {
  /** ChildConflict: an object the backend does not own holds the name of its tenant registry or policy. */
  BackendResolved: ['Resolved', 'BackendNotFound', 'EndpointsNotPublished', 'ChildConflict'],
  QuotaLedgerAvailable: ['Available', 'MultiTenancyDisabled', 'LedgerUnreachable'],
  QuotaPolicyWritable: ['Writable', 'QuotaPolicyNotWritable', 'MultiTenancyDisabled', 'LedgerUnreachable'],
  CapacityAllocatable: ['Allocatable', 'CapacityNotObserved', 'NothingToAllocate'],
  QuotaWithinTotal: ['WithinTotal', 'Oversubscribed'],
  Releasable: ['Released', 'HeldByBindings', 'LedgerNotReleased'],
} as const;

export const PoolCondition = conditionTypes(poolConditions);
export const PoolReason = conditionReasons(poolConditions);
