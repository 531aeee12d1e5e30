// The tenants this operator registered on one master (ConfigMap `<backend>-tenant-registry`): the only
// ledger entries it may write over or delete. A name is added before the tenant is first written and
// removed once it is gone, so no tenant this operator created is ever taken for someone else's.
import type { ConfigMap } from 'kubernetes-types/core/v1.js';
import type { KVCacheBackend } from '../../api/types.ts';
import type { KubeClient } from '../../kube/client.ts';
import type { KubeObject } from '../../kube/object.ts';
import { fieldManagers } from '../../model/identity.ts';
import { backendLabels, backendOwnerReference } from '../../model/store-objects.ts';

export const registryKey = 'tenants';

export function registryConfigMapName(backend: string): string {
  return `${backend}-tenant-registry`;
}

/** One tenant name a line, sorted. */
export function renderRegistry(
  backend: KVCacheBackend,
  namespace: string,
  tenants: Set<string>,
): KubeObject<ConfigMap> {
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: {
      name: registryConfigMapName(backend.metadata.name!),
      namespace,
      labels: backendLabels(backend.metadata.name!, 'tenant-registry'),
      ownerReferences: [{ ...backendOwnerReference(backend), controller: false }],
    },
    data: { [registryKey]: [...tenants].sort().join('\n') },
  };
}

export function parseRegistry(text: string | undefined): Set<string> {
  return new Set((text ?? '').split('\n').filter((line) => line.length > 0));
}

export const sameTenants = (a: Set<string>, b: Set<string>) =>
  a.size === b.size && [...a].every((t) => b.has(t));

/** The registry's ConfigMap read from the apiserver (never a cache: a stale copy could disown a fresh tenant). */
export async function readRegistryObject(
  client: KubeClient,
  namespace: string,
  backend: string,
): Promise<KubeObject<ConfigMap> | undefined> {
  return client.find<KubeObject<ConfigMap>>({
    apiVersion: 'v1',
    kind: 'ConfigMap',
    namespace,
    name: registryConfigMapName(backend),
  });
}

export async function writeRegistry(
  client: KubeClient,
  backend: KVCacheBackend,
  namespace: string,
  tenants: Set<string>,
): Promise<void> {
  await client.apply(renderRegistry(backend, namespace, tenants), { fieldManager: fieldManagers.controller });
}
