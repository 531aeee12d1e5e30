// Kubernetes Events about objects (core/v1), repeated ones folded into a count as kubectl shows them.

import type { KubeClient } from './client.ts';
import { ApiError } from './errors.ts';
import { log } from './log.ts';
import type { KubeObject } from './object.ts';
import { apiTime } from './time.ts';

type Event = KubeObject & { count?: number; lastTimestamp?: string };

export class EventRecorder {
  private readonly client: KubeClient;
  private readonly component: string;
  private readonly recent = new Map<string, { name: string; namespace: string; count: number }>();

  constructor(client: KubeClient, component: string) {
    this.client = client;
    this.component = component;
  }

  /** Records an event; failures are logged, never thrown (events are best effort). */
  async record(obj: KubeObject, type: 'Normal' | 'Warning', reason: string, message: string): Promise<void> {
    // The apiserver files events about cluster-scoped objects (backends, Nodes) under `default`.
    const namespace = obj.metadata.namespace || 'default';
    const key = `${obj.kind}/${namespace}/${obj.metadata.name}/${reason}/${message}`;
    const now = apiTime();
    try {
      const seen = this.recent.get(key);
      if (seen) {
        const folded = await this.client
          .mergePatch(
            { apiVersion: 'v1', kind: 'Event', namespace: seen.namespace, name: seen.name },
            { count: seen.count + 1, lastTimestamp: now },
          )
          .then(
            () => true,
            (err: unknown) => {
              // The apiserver expires events (an hour by default): a repeat then starts a new one.
              if (err instanceof ApiError && err.isNotFound) return false;
              throw err;
            },
          );
        if (folded) {
          seen.count += 1;
          return;
        }
        this.recent.delete(key);
      }
      const created = await this.client.create<Event>({
        apiVersion: 'v1',
        kind: 'Event',
        metadata: { generateName: `${obj.metadata.name}.`, namespace },
        involvedObject: {
          apiVersion: obj.apiVersion,
          kind: obj.kind,
          name: obj.metadata.name,
          namespace: obj.metadata.namespace,
          uid: obj.metadata.uid,
          resourceVersion: obj.metadata.resourceVersion,
        },
        reason,
        message,
        type,
        source: { component: this.component },
        reportingComponent: this.component,
        firstTimestamp: now,
        lastTimestamp: now,
        count: 1,
      } as Event);
      if (this.recent.size > 1000) this.recent.clear();
      this.recent.set(key, { name: created.metadata.name!, namespace, count: 1 });
    } catch (err) {
      log.warn(
        { err: String(err), reason, object: `${obj.kind}/${obj.metadata.name}` },
        'could not record an event',
      );
    }
  }
}
