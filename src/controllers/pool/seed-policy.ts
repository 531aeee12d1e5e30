// The tenant policy a managed leader loads at start (ConfigMap `<backend>-tenant-quota-policy`): the
// whole ledger this operator wants on that master, sorted, as the store's `version: 1` YAML. Pure.
import { stringify } from 'yaml';
import type { KVCacheBackend } from '../../api/types.ts';
import type { KubeObject } from '../../kube/object.ts';
import { backendLabels, backendOwnerReference } from '../backend/labels.ts';

export const policyKey = 'tenant-quota-policy.yaml';

export function seedConfigMapName(backend: string): string {
  return `${backend}-tenant-quota-policy`;
}

export function renderPolicy(tenants: Map<string, bigint>): string {
  const sorted = [...tenants].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return stringify({ version: 1, tenants: sorted.map(([name, quota]) => ({ name, quota: Number(quota) })) });
}

export function renderSeedConfigMap(
  backend: KVCacheBackend,
  namespace: string,
  tenants: Map<string, bigint>,
): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: {
      name: seedConfigMapName(backend.metadata.name!),
      namespace,
      labels: backendLabels(backend.metadata.name!, 'tenant-quota-policy'),
      ownerReferences: [{ ...backendOwnerReference(backend), controller: false }],
    },
    data: { [policyKey]: renderPolicy(tenants) },
  } as KubeObject;
}
