// Informers survive a kube-apiserver restart: objects created, changed and deleted (through a second
// apiserver on the same etcd) while the watched apiserver was down are all reconciled afterwards.

import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ControlPlane } from '../../local/control-plane.ts';
import { KubeClient, type KubeObject } from '../../src/kube/client.ts';
import { Controller, ownKey, splitKey } from '../../src/kube/controller.ts';
import { Informer } from '../../src/kube/informer.ts';
import { waitFor } from '../support/wait.ts';

type ConfigMap = KubeObject & { data?: Record<string, string> };
const ns = 'restart';

function configMap(name: string, value: string): ConfigMap {
  return { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: ns }, data: { value } };
}

describe('informer across a kube-apiserver restart', () => {
  let cp: ControlPlane;
  let watched: KubeClient;
  let other: KubeClient;
  let informer: Informer<ConfigMap>;
  let controller: Controller;
  /** What the controller last saw per key: the value, or null once the object is gone. */
  const seen = new Map<string, string | null>();

  before(async () => {
    cp = await ControlPlane.start();
    watched = await KubeClient.fromKubeconfigFile(cp.kubeconfigPath);
    other = await KubeClient.fromKubeconfigFile((await cp.addApiserver()).kubeconfigPath);
    await watched.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
    informer = new Informer<ConfigMap>(watched, { apiVersion: 'v1', kind: 'ConfigMap', namespace: ns });
    controller = new Controller({
      name: 'restart-test',
      reconcile: async (key) => {
        const { namespace, name } = splitKey(key);
        seen.set(key, informer.get(name, namespace)?.data?.value ?? null);
        return undefined;
      },
    }).watch(informer, ownKey);
    informer.start();
    await informer.waitForSync();
    controller.start();
  });
  after(async () => {
    await controller?.stop();
    await informer?.stop();
    await watched?.close();
    await other?.close();
    await cp?.stop();
  });

  it('reconciles every change made while it was down, none missed', async () => {
    for (let i = 0; i < 5; i++) await watched.create(configMap(`before-${i}`, 'v1'));
    await waitFor(() => (seen.size >= 5 ? true : undefined), {
      what: 'the first five reconciles',
      timeoutMs: 10_000,
    });
    const restartsBefore = informer.health().restarts;

    await cp.stopApiserver();
    for (let i = 0; i < 20; i++) await other.create(configMap(`during-${i}`, 'v1'));
    await other.replace({
      ...(await other.get<ConfigMap>({
        apiVersion: 'v1',
        kind: 'ConfigMap',
        namespace: ns,
        name: 'before-0',
      })),
      data: { value: 'v2' },
    });
    await other.delete({ apiVersion: 'v1', kind: 'ConfigMap', namespace: ns, name: 'before-1' });
    await cp.startApiserver();

    const expected = new Map<string, string | null>([
      ['restart/before-0', 'v2'],
      ['restart/before-1', null],
      ...[2, 3, 4].map((i) => [`restart/before-${i}`, 'v1'] as [string, string]),
      ...Array.from({ length: 20 }, (_, i) => [`restart/during-${i}`, 'v1'] as [string, string]),
    ]);
    await waitFor(() => ([...expected].every(([k, v]) => seen.get(k) === v) ? true : undefined), {
      what: 'every change made during the outage to be reconciled',
      timeoutMs: 60_000,
    });
    const health = informer.health();
    assert.ok(health.restarts > restartsBefore, 'the watch broke and was restarted');
    await waitFor(() => (informer.health().watching ? true : undefined), {
      what: 'watching again',
      timeoutMs: 10_000,
    });
    assert.equal(informer.list().length, 24);
  });
});
