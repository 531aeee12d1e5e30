// The walkthrough's manifests, applied verbatim to the real apiserver, are accepted and stored with the
// specified defaults; `kubectl get` prints the specified columns.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { KVCacheBackend, KVCachePoolBinding, ModelDeployment } from '../../src/api/types.ts';
import type { KubeClient, KubeObject } from '../../src/kube/client.ts';
import { ensureNamespace, kubectl, testClient } from '../support/cluster.ts';
import { seedFiles, seedObjects, seedText } from '../support/seed.ts';

const instanceType = 'local-cpu';
const v1 = 'worker.gpustack.ai/v1';

describe('the walkthrough manifests', () => {
  let client: KubeClient;

  before(async () => {
    client = await testClient();
    for (const ns of ['gpustack-system', 'team-a', 'team-b']) await ensureNamespace(client, ns);
    await client.apply(
      {
        apiVersion: v1,
        kind: 'InstanceType',
        metadata: { name: instanceType },
        spec: { os: 'linux', arch: 'amd64', unitResources: { cpu: '1', ram: '2Gi' }, localStorage: '10Gi' },
      } as KubeObject,
      { fieldManager: 'kvpool-test' },
    );
  });
  after(() => client.close());

  it('applies every step verbatim (INSTANCE_TYPE replaced by a real InstanceType)', async () => {
    const files = seedFiles();
    assert.deepEqual(files, [
      'step-1-store.yaml',
      'step-2-pool-binding.yaml',
      'step-3-workload.yaml',
      'step-4-ha.yaml',
      'step-5-disk-backend.yaml',
      'step-6-second-team.yaml',
    ]);
    for (const file of files) {
      const text = seedText(file, instanceType);
      const out = await kubectl(['apply', '--server-side', '--field-manager=walkthrough', '-f', '-'], text);
      assert.match(out, /serverside-applied/, `${file}: ${out}`);
    }
  });

  it('stores the backend defaults of the spec (Step 1 then Step 4)', async () => {
    const b = await client.get<KVCacheBackend>({
      apiVersion: v1,
      kind: 'KVCacheBackend',
      name: 'mooncake-dram',
    });
    assert.equal(b.spec.type, 'Mooncake');
    assert.deepEqual(b.spec.transport, { protocol: 'Auto' });
    assert.deepEqual(b.spec.connection.managed?.leader, {
      replicas: 3,
      electionBackend: 'Kubernetes',
      memberAddressing: 'Service',
      allocationStrategy: 'FreeRatioFirst',
      multiTenancy: true,
    });
    assert.equal(b.spec.connection.managed?.members[0]?.capacityPerMember, '8Gi');
    const disk = await client.get<KVCacheBackend>({
      apiVersion: v1,
      kind: 'KVCacheBackend',
      name: 'mooncake-disk',
    });
    assert.equal(disk.spec.connection.managed?.leader.replicas, 1);
    assert.deepEqual(disk.spec.connection.managed?.members[0]?.localDisks, [
      {
        path: '/var/lib/kvcache',
        capacity: '100Gi',
        cleanAfterDelete: false,
        offload: 'OnEviction',
        foreignContent: 'Refuse',
      },
    ]);
  });

  it('defaults an omitted domain name to "default" and keeps named ones', async () => {
    const get = (namespace: string, name: string) =>
      client.get<KVCachePoolBinding>({ apiVersion: v1, kind: 'KVCachePoolBinding', namespace, name });
    assert.deepEqual((await get('team-a', 'team-a')).spec.domain, {
      name: 'default',
      blockSize: 64,
      dtype: 'bfloat16',
    });
    assert.equal((await get('team-b', 'team-b')).spec.domain.name, 'llama-8b-v1');
    assert.equal((await get('team-a', 'qwen-fp8')).spec.domain.dtype, 'fp8_e4m3');
  });

  it('stores the ModelDeployment defaults', async () => {
    const md = await client.get<ModelDeployment>({
      apiVersion: v1,
      kind: 'ModelDeployment',
      namespace: 'team-a',
      name: 'qwen-chat',
    });
    assert.deepEqual(md.spec.kvCache, { poolRef: { name: 'team-a' }, connector: 'Mooncake' });
    assert.deepEqual(md.spec.roles[0], {
      name: 'server',
      kind: 'Server',
      replicas: 2,
      size: 1,
      instanceType,
      resources: { accelerator: '1' },
    });
  });

  it('prints the specified columns', async () => {
    const header = async (args: string[]) => (await kubectl(['get', ...args])).split('\n')[0]!.split(/\s+/);
    assert.deepEqual(await header(['kvcb']), ['NAME', 'TYPE', 'PHASE', 'ENDPOINT', 'CAPACITY', 'AGE']);
    assert.deepEqual(await header(['kvcp']), ['NAME', 'QUOTA', 'USAGE', 'PHASE', 'ENDPOINT', 'AGE']);
    assert.deepEqual(await header(['kvcpb', '-n', 'team-a']), [
      'NAME',
      'POOL',
      'DOMAIN',
      'EFFECTIVE',
      'USAGE',
      'PHASE',
      'AGE',
    ]);
    assert.deepEqual(await header(['md', '-n', 'team-a']), ['NAME', 'ENGINE', 'ROLES', 'PHASE', 'AGE']);
    const rows = await kubectl(['get', 'kvcpb', '-n', 'team-a', '--no-headers']);
    assert.match(rows, /^qwen-fp8\s+shared-dram\s+qwen-fp8-v1\s/m);
    assert.match(rows, /^team-a\s+shared-dram\s+default\s/m);
  });

  it('serves the short names and the gpustack category', async () => {
    const resources = await kubectl(['api-resources', '--categories=gpustack', '--no-headers']);
    for (const [short, kind] of [
      ['kvcb', 'KVCacheBackend'],
      ['kvcp', 'KVCachePool'],
      ['kvcpb', 'KVCachePoolBinding'],
      ['md', 'ModelDeployment'],
      ['set', 'Setting'],
    ]) {
      assert.match(resources, new RegExp(`\\s${short}\\s.*\\s${kind}$`, 'm'), `${kind} as ${short}`);
    }
    assert.match(
      await kubectl(['get', 'instancetype', '--no-headers']),
      new RegExp(`^${instanceType}\\s`, 'm'),
    );
  });

  it('groups the kinds into the kvcache and kvpool categories', async () => {
    const kindsIn = async (category: string) =>
      (await kubectl(['api-resources', `--categories=${category}`, '--no-headers', '-o', 'name']))
        .split('\n')
        .filter(Boolean)
        .sort();
    const cache = [
      'kvcachebackends.worker.gpustack.ai',
      'kvcachepoolbindings.worker.gpustack.ai',
      'kvcachepools.worker.gpustack.ai',
    ];
    assert.deepEqual(await kindsIn('kvcache'), cache);
    assert.deepEqual(
      await kindsIn('kvpool'),
      [...cache, 'instancetypes.worker.gpustack.ai', 'modeldeployments.worker.gpustack.ai'].sort(),
    );
  });

  it('lists the walkthrough’s backends, pool and Bindings with kubectl get kvcache -A', async () => {
    const objects = seedFiles().flatMap((file) => seedObjects(file, instanceType));
    // A row names kind.group/name after its namespace; kubectl leaves the column blank for a
    // cluster-scoped kind listed beside namespaced ones, or drops it.
    const row = (o: KubeObject) => {
      const name = `${o.kind.toLowerCase()}\\.worker\\.gpustack\\.ai/${o.metadata.name}`;
      return new RegExp(`^${o.metadata.namespace ? `${o.metadata.namespace} +` : ' *'}${name}\\s`, 'm');
    };
    const cache = objects.filter((o) => o.kind !== 'ModelDeployment');
    assert.deepEqual([...new Set(cache.map((o) => o.kind))].sort(), [
      'KVCacheBackend',
      'KVCachePool',
      'KVCachePoolBinding',
    ]);
    const listed = await kubectl(['get', 'kvcache', '-A']);
    for (const o of cache) assert.match(listed, row(o), `kubectl get kvcache -A printed:\n${listed}`);
    assert.doesNotMatch(listed, /modeldeployment\.|instancetype\./);

    const wider = await kubectl(['get', 'kvpool', '-A']);
    for (const o of objects) assert.match(wider, row(o), `kubectl get kvpool -A printed:\n${wider}`);
    assert.match(wider, new RegExp(`^instancetype\\.worker\\.gpustack\\.ai/${instanceType}\\s`, 'm'));
    assert.doesNotMatch(wider, /setting\.gpustack\.ai/);
  });
});
