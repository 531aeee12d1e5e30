// Shares one informer per watched collection among the controllers and webhooks of a process.
import type { KubeClient } from './client.ts';
import { Informer, type InformerOptions, type RunnableInformer } from './informer.ts';
import type { KubeObject } from './object.ts';

export class InformerFactory {
  private readonly client: KubeClient;
  private readonly informers = new Map<string, RunnableInformer>();
  constructor(client: KubeClient) {
    this.client = client;
  }

  /** The informer for this collection, created on first use (indexers are added to a shared one). */
  get<T extends KubeObject>(options: InformerOptions<T>): Informer<T> {
    const key = [
      options.apiVersion,
      options.kind,
      options.namespace,
      options.labelSelector,
      options.fieldSelector,
    ].join('|');
    // The key names the kind, so an informer found under it holds objects of that kind.
    let informer = this.informers.get(key) as Informer<T> | undefined;
    if (!informer) {
      informer = new Informer<T>(this.client, { ...options, indexers: {} });
      this.informers.set(key, informer);
    }
    for (const [name, fn] of Object.entries(options.indexers ?? {})) informer.addIndexer(name, fn);
    return informer;
  }

  all(): RunnableInformer[] {
    return [...this.informers.values()];
  }
}
