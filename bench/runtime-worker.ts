// The controller side of the runtime benchmark, in its own process so its memory is measured alone:
// an informer and a controller over KVCachePoolBindings that writes each one's status once.
import { KubeClient } from '../src/kube/client.ts';
import { Controller, ownKey, splitKey } from '../src/kube/controller.ts';
import { Informer, objectKey } from '../src/kube/informer.ts';
import { apiWrites } from '../src/kube/metrics.ts';
import type { KubeObject } from '../src/kube/object.ts';

type Binding = KubeObject & { status?: { phase?: string } };
const [kubeconfig, namespace, concurrency, resyncMs] = process.argv.slice(2) as [
  string,
  string,
  string,
  string,
];

const client = await KubeClient.fromKubeconfigFile(kubeconfig);
const informer = new Informer<Binding>(client, {
  apiVersion: 'worker.gpustack.ai/v1',
  kind: 'KVCachePoolBinding',
  namespace,
  resyncMs: Number(resyncMs),
});
const eventAt = new Map<string, number>();
const firstReconcile = new Map<
  string,
  { key: string; createdAt: number; eventAt: number; startedAt: number }
>();
let reconciles = 0;
let resyncEvents = 0;

const controller = new Controller({
  name: 'bench',
  concurrency: Number(concurrency),
  reconcile: async (key) => {
    const startedAt = Date.now();
    reconciles += 1;
    const { namespace: ns, name } = splitKey(key);
    const obj = informer.get(name, ns);
    if (!obj) return undefined;
    if (!firstReconcile.has(key)) {
      const createdAt = Number(obj.metadata.annotations?.['bench.kvpool/created-at']);
      firstReconcile.set(key, { key, createdAt, eventAt: eventAt.get(key) ?? startedAt, startedAt });
    }
    if (obj.status?.phase !== 'Ready') {
      await client.apply(
        {
          apiVersion: obj.apiVersion,
          kind: obj.kind,
          metadata: { name, namespace: ns },
          status: { phase: 'Ready' },
        } as KubeObject,
        { fieldManager: 'bench/status', subresource: 'status' },
      );
    }
    return undefined;
  },
});
informer.on((event, obj) => {
  if (event === 'add') eventAt.set(objectKey(obj), Date.now());
  if (event === 'resync') resyncEvents += 1;
});
controller.watch(informer, ownKey);
informer.start();
await informer.waitForSync();
controller.start();

const writes = async () => (await apiWrites.get()).values.reduce((s, v) => s + v.value, 0);

process.on('message', async (msg: { type: string }) => {
  if (msg.type === 'stats') {
    process.send!({
      reconciles,
      resyncEvents,
      writes: await writes(),
      firstReconcile: [...firstReconcile.values()],
      queueDepth: controller.queue.depth,
    });
  } else if (msg.type === 'stop') {
    await controller.stop();
    await informer.stop();
    await client.close();
    process.exit(0);
  }
});
process.send!({ ready: true });
