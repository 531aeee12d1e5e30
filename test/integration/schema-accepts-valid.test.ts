// The schema's refusals are not blanket: objects next to the refused ones, valid this time, are created.
import { after, before, describe, it } from 'node:test';
import type { KubeClient } from '../../src/kube/client.ts';
import { ensureNamespace, testClient } from '../support/cluster.ts';
import {
  binding,
  deployment,
  endpoints,
  external,
  group,
  managed,
  named,
  ns,
  type Obj,
  v1,
} from '../support/schema-refusals.ts';

describe('schema refusals through the real apiserver', () => {
  let client: KubeClient;
  before(async () => {
    client = await testClient();
    await ensureNamespace(client, ns);
  });
  after(() => client.close());

  it('accepts the same objects when they are valid (the refusals are not blanket)', async () => {
    await client.create(
      named(
        (n) =>
          managed(n, [
            group({
              localDisks: [
                { path: '/var/lib/kvcache', capacity: '1Gi', eviction: { watermark: { high: 90, low: 80 } } },
              ],
            }),
          ]),
        'ok',
      ),
    );
    for (const path of ['/data/kvcache', '/opt/kvcache', '/tmp/kvcache', '/var/lib/kubelet2', '/library/kv'])
      await client.create(named((n) => managed(n, [group({ localDisks: [{ path }] })]), 'okpath'));
    await client.create(named((n) => external(n, endpoints('[::1]:50051', '10.0.0.5:9003')), 'okext'));
    await client.create(named((n) => binding(n, { poolRef: { name: 'shared.dram-2' } }), 'okpref'));
    const volumes = [{ name: 'weights', persistentVolumeClaim: { claimName: 'w' }, mountPath: '/models' }];
    await client.create(
      named(
        (n) =>
          deployment(n, {
            roles: [{ name: 'server', instanceType: 't', privileged: false, additionalVolumes: volumes }],
          }),
        'okrole',
      ),
    );
    const base = named((n) => managed(n), 'okedit');
    await client.create(base);
    const stored = await client.get<Obj>({
      apiVersion: v1,
      kind: 'KVCacheBackend',
      name: base.metadata.name!,
    });
    const members = (stored.spec.connection as { managed: { members: unknown[] } }).managed.members;
    members.push(group({ medium: 'VRAM' }));
    await client.replace(stored);
  });
});
