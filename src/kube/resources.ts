// Maps apiVersion/kind to REST paths through API discovery, cached per group version.
import type { APIResource, APIResourceList } from 'kubernetes-types/meta/v1.js';

export interface ObjectRef {
  apiVersion: string;
  kind: string;
  name: string;
  namespace?: string;
}

export class ResourceResolver {
  private readonly cache = new Map<string, Promise<APIResource[]>>();
  private readonly fetchJson: (path: string) => Promise<unknown>;

  constructor(fetchJson: (path: string) => Promise<unknown>) {
    this.fetchJson = fetchJson;
  }

  private groupVersionPath(apiVersion: string): string {
    return apiVersion.includes('/') ? `/apis/${apiVersion}` : `/api/${apiVersion}`;
  }

  async resourceFor(apiVersion: string, kind: string): Promise<APIResource> {
    const find = async () =>
      (await this.load(apiVersion)).find((r) => r.kind === kind && !r.name.includes('/'));
    let found = await find();
    if (!found) {
      // A CRD installed after the first look-up: discover again once.
      this.cache.delete(apiVersion);
      found = await find();
    }
    if (!found)
      throw new Error(`the API server serves no kind ${kind} in ${apiVersion}; are the CRDs installed?`);
    return found;
  }

  private load(apiVersion: string): Promise<APIResource[]> {
    let entry = this.cache.get(apiVersion);
    if (!entry) {
      entry = this.fetchJson(this.groupVersionPath(apiVersion)).then(
        (list) => (list as APIResourceList).resources,
        () => [],
      );
      this.cache.set(apiVersion, entry);
    }
    return entry;
  }

  /** A collection; for a namespaced kind without a namespace, the collection across all namespaces. */
  async collectionPath(ref: Omit<ObjectRef, 'name'>): Promise<string> {
    const r = await this.resourceFor(ref.apiVersion, ref.kind);
    const ns = r.namespaced && ref.namespace ? `/namespaces/${encodeURIComponent(ref.namespace)}` : '';
    return `${this.groupVersionPath(ref.apiVersion)}${ns}/${r.name}`;
  }

  /** An object's path; a namespaced object without a namespace is in `default`, as kubectl has it. */
  async objectPath(ref: ObjectRef, subresource?: string): Promise<string> {
    const base = `${await this.collectionPath({ ...ref, namespace: ref.namespace ?? 'default' })}/${encodeURIComponent(ref.name)}`;
    return subresource ? `${base}/${subresource}` : base;
  }
}
