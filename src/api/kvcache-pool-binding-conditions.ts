// The conditions of a KVCachePoolBinding: each type with the reasons it may carry.
import { conditionReasons, conditionTypes } from './condition-table.ts';
import { BindingReleasableReason } from './kvcache-pool-binding.ts';

export const bindingConditions = {
  DomainExclusive: ['Exclusive', 'TenantExistsOnMaster', 'DomainClaimedByMultipleBindings'],
  QuotaObserved: [
    'Observed',
    'TenantExistsOnMaster',
    'MasterNotScraped',
    'TenantNotInLedger',
    'PoolNotFound',
  ],
  QuotaGranted: [
    'Granted',
    'Unenforced',
    'TenantExistsOnMaster',
    'NoLedgerEntry',
    'CeilingAboveTotal',
    'LedgerRequestFailed',
    'GrantNotExported',
    'ZeroGranted',
  ],
  Releasable: Object.values(BindingReleasableReason),
} as const;

export const BindingCondition = conditionTypes(bindingConditions);
export const BindingReason = conditionReasons(bindingConditions);
