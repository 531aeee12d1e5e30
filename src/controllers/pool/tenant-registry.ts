// The tenants this operator registered on one master (ConfigMap `<backend>-tenant-registry`): the only
// ledger entries it may write over or delete. A name is added before the tenant is first written and
// removed once it is gone, so no tenant this operator created is ever taken for someone else's.
import type { ConfigMap } from 'kubernetes-types/core/v1.js';
import type { KVCacheBackend } from '../../api/types.ts';
import type { KubeClient } from '../../kube/client.ts';
import type { KubeObject } from '../../kube/object.ts';
import { fieldManagers } from '../../vocabulary/identity.ts';
import { backendLabels, backendOwnerReference } from '../../vocabulary/store-objects.ts';

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

/** The registry's ConfigMap read from the apiserver. */
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

/**
 * Each backend's registry as this replica last read it live or wrote it. A pass takes the informer's
 * copy only when it is that very version: a copy that lags this replica's own write would disown a
 * tenant it just registered, so any other version (or none known) is read live. Only the leader writes
 * the registry, and a replica that loses leadership exits, so within a process the version it knows is
 * the newest; its writes are conditional on it as well, so an outside edit fails the write (and the
 * pass, which reads live next time) instead of being overwritten.
 */
export class RegistryVersions {
  private readonly known = new Map<string, string>();

  /** The registry a pass decides from: the cached copy at the known version, else read live. */
  async current(
    client: KubeClient,
    namespace: string,
    backend: string,
    cached: KubeObject<ConfigMap> | undefined,
  ): Promise<KubeObject<ConfigMap> | undefined> {
    const version = cached?.metadata.resourceVersion;
    if (version !== undefined && version === this.known.get(backend)) return cached;
    const live = await readRegistryObject(client, namespace, backend);
    this.remember(backend, live);
    return live;
  }

  /** Writes the tenants, conditional on the version this replica knows (a create when none). */
  async write(client: KubeClient, backend: KVCacheBackend, namespace: string, tenants: Set<string>) {
    const name = backend.metadata.name!;
    const rendered = renderRegistry(backend, namespace, tenants);
    const version = this.known.get(name);
    const desired =
      version === undefined
        ? rendered
        : { ...rendered, metadata: { ...rendered.metadata, resourceVersion: version } };
    try {
      const written = await client.apply<KubeObject<ConfigMap>>(desired, {
        fieldManager: fieldManagers.controller,
      });
      this.remember(name, written);
    } catch (err) {
      this.known.delete(name);
      throw err;
    }
  }

  forget(backend: string): void {
    this.known.delete(backend);
  }

  private remember(backend: string, obj: KubeObject<ConfigMap> | undefined) {
    const version = obj?.metadata.resourceVersion;
    if (version === undefined) this.known.delete(backend);
    else this.known.set(backend, version);
  }
}
