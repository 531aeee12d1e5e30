// Resolves a deployment's cache: Binding (same namespace) → pool → backend, into the connection the
// engines are given, or the reason there is none (docs/concepts.md, Workloads). Pure.
import type { ReasonOf } from '../../api/condition-table.ts';
import { conditionOf } from '../../api/conditions.ts';
import { PoolCondition, PoolReason } from '../../api/kvcache-pool-conditions.ts';
import {
  ModelDeploymentCondition,
  ModelDeploymentReason,
  modelDeploymentConditions,
} from '../../api/model-deployment-conditions.ts';
import type { KVCacheBackend, KVCachePool, KVCachePoolBinding, ModelDeployment } from '../../api/types.ts';
import type { CacheConnection } from '../../inject/types.ts';
import { effectiveProtocol, storeProtocol } from '../../vocabulary/backend-spec.ts';
import { type ConditionStatus, type DecidedCondition, deciderOf } from '../../vocabulary/conditions.ts';
import { domainOf } from '../../vocabulary/domains.ts';

export interface CacheResolution {
  domainRegistered: DecidedCondition;
  /** What the engines connect to; undefined renders no connector at all. */
  connection?: CacheConnection;
  /** Echoed into status.kvCache once the Binding resolves. */
  echo?: { binding: string; pool?: string; domain?: { name: string; blockSize?: number; dtype?: string } };
}

const decided = deciderOf(modelDeploymentConditions);
type Registration = ReasonOf<
  typeof modelDeploymentConditions,
  typeof ModelDeploymentCondition.DomainRegistered
>;
const cond = (status: ConditionStatus, reason: Registration, message: string) =>
  decided(ModelDeploymentCondition.DomainRegistered, status, reason, message);

export function resolveCache(
  md: ModelDeployment,
  binding: KVCachePoolBinding | undefined,
  pool: KVCachePool | undefined,
  backend: KVCacheBackend | undefined,
): CacheResolution {
  const ref = md.spec.kvCache?.poolRef.name;
  if (!ref)
    return {
      domainRegistered: cond(
        'True',
        ModelDeploymentReason.NotApplicable,
        'this deployment uses no shared cache',
      ),
    };
  if (!binding) {
    return {
      domainRegistered: cond(
        'False',
        ModelDeploymentReason.BindingNotFound,
        `KVCachePoolBinding ${md.metadata.namespace}/${ref} does not exist; ask an administrator for one`,
      ),
    };
  }
  const domain = {
    name: domainOf(binding),
    blockSize: binding.spec.domain.blockSize,
    dtype: binding.spec.domain.dtype,
  };
  const echo = { binding: ref, pool: binding.spec.poolRef.name, domain };
  if (binding.metadata.deletionTimestamp) {
    return {
      domainRegistered: cond(
        'False',
        ModelDeploymentReason.BindingDeleting,
        `KVCachePoolBinding ${ref} is being deleted`,
      ),
      echo,
    };
  }
  if (binding.status?.phase !== 'Ready') {
    return {
      domainRegistered: cond(
        'False',
        ModelDeploymentReason.BindingNotReady,
        `KVCachePoolBinding ${ref} is ${binding.status?.phase ?? 'not observed yet'}: ${binding.status?.phaseMessage ?? ''}`.trim(),
      ),
      echo,
    };
  }
  const registered = cond(
    'True',
    ModelDeploymentReason.Registered,
    `domain ${domain.name} of KVCachePoolBinding ${ref} is registered on the store`,
  );
  const endpoint = pool?.status?.clientEndpoint;
  if (pool?.status?.phase !== 'Ready' || !endpoint || !backend) {
    return { domainRegistered: registered, echo };
  }
  const ledger = conditionOf(pool, PoolCondition.QuotaLedgerAvailable);
  const group = backend.spec.connection.managed?.members[0];
  const protocol = group
    ? storeProtocol(effectiveProtocol(backend, group))
    : storeProtocol(backend.spec.transport?.protocol ?? 'Auto');
  return {
    domainRegistered: registered,
    echo,
    connection: {
      binding: ref,
      pool: pool.metadata.name!,
      domain,
      masterAddress: endpoint,
      protocol,
      tenantInjected: !(ledger?.status === 'False' && ledger.reason === PoolReason.MultiTenancyDisabled),
    },
  };
}
