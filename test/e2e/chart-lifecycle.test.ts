// kvpool's chart on the local cluster, in another namespace than the walkthrough's: the operator runs
// as its ServiceAccount and cannot read Secrets beyond its own; `helm upgrade` to a new operator image
// keeps the store (same Pods, same data); `helm uninstall` leaves no webhook in the way and no
// finalizer waiting on an operator that is gone.

import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { operatorImage } from '../../images/recipes.ts';
import { chartDir } from '../../local/helm.ts';
import type { KubeObject } from '../../src/kube/object.ts';
import { mutatingConfigurationName, validatingConfigurationName } from '../../src/webhooks/configuration.ts';
import { type E2ECluster, startE2ECluster } from '../support/local-cluster.ts';
import { podsMatching } from '../support/pods.ts';
import { seedText } from '../support/seed.ts';
import { runStoreClient } from '../support/store-client.ts';
import { waitFor } from '../support/wait.ts';

const ns = 'kvpool-system';
type Pod = KubeObject & {
  spec: { serviceAccountName?: string; containers: { image: string }[] };
  status?: { phase?: string; podIP?: string; containerStatuses?: { ready?: boolean; imageID?: string }[] };
};

describe('the chart on the local cluster: another namespace, upgrade, uninstall', () => {
  let e: E2ECluster;
  const pods = (selector: string) => podsMatching<Pod>(e.cluster.client, ns, selector);
  const storePods = () => pods('app.kubernetes.io/name=kv-cache-backend');
  const servingLeaderIp = async () => {
    const leaders = await pods('app.kubernetes.io/component=leader');
    return leaders.find((p) => p.status?.containerStatuses?.[0]?.ready)?.status?.podIP;
  };
  const store = async (op: 'put' | 'get', key: string) =>
    runStoreClient(
      { master: `${await servingLeaderIp()}:50051`, host: e.cluster.hostAddress, tenant: 'default' },
      [op === 'put' ? { op, key, data: Buffer.from(`value of ${key}`) } : { op, key }],
    );

  before(async () => {
    e = await startE2ECluster({ namespace: ns });
  });
  after(() => e?.stop());

  it('runs the operator in kvpool-system as its ServiceAccount, refused Secrets outside its namespace', async () => {
    const operators = await pods('app.kubernetes.io/component=operator');
    assert.equal(operators.length, 2);
    for (const p of operators) {
      assert.equal(p.spec.serviceAccountName, 'kvpool-operator');
      assert.equal(p.spec.containers[0]!.image, operatorImage.replace(/^docker\.io\//, ''));
    }
    // The operator's own credentials, from inside its Pod: the apiserver refuses them.
    const script = `const fs=require('fs');const https=require('https');
const d='/var/run/secrets/kubernetes.io/serviceaccount/';
https.get({host:process.env.KUBERNETES_SERVICE_HOST,port:process.env.KUBERNETES_SERVICE_PORT,
path:'/api/v1/namespaces/kube-system/secrets',ca:fs.readFileSync(d+'ca.crt'),
headers:{Authorization:'Bearer '+fs.readFileSync(d+'token','utf8')}},r=>{console.log(r.statusCode);r.resume()});`;
    const status = await e.kubectl([
      '-n',
      ns,
      'exec',
      operators[0]!.metadata.name!,
      '--',
      'node',
      '-e',
      script,
    ]);
    assert.equal(status.trim(), '403');
  });

  it('runs Steps 1 and 2 with the store in the operator’s namespace, and keeps a key there', async () => {
    await e.kubectl(['apply', '--server-side', '-f', '-'], seedText('step-1-store.yaml'));
    const row = await waitFor(
      async () => {
        const out = await e.kubectl(['get', 'kvcb', 'mooncake-dram', '--no-headers']);
        return /\sReady\s.*\s16Gi\s/.test(out) ? out : undefined;
      },
      { what: 'kubectl get kvcb shows Ready with 16Gi' },
    );
    assert.match(row, /mooncake-dram-leader\.kvpool-system\.svc:50051/);
    await e.kubectl(['create', 'namespace', 'team-a']);
    await e.kubectl(['apply', '--server-side', '-f', '-'], seedText('step-2-pool-binding.yaml'));
    await waitFor(
      async () => {
        const out = await e.kubectl([
          '-n',
          'team-a',
          'get',
          'kvcpb',
          'team-a',
          '-o',
          'jsonpath={.status.phase}',
        ]);
        return out === 'Ready' ? true : undefined;
      },
      { what: 'the Binding Ready with its grant (the domain is registered on the master)' },
    );
    assert.deepEqual(await store('put', 'before-upgrade'), [{ rc: 0 }]);
  });

  it('helm upgrade to a new operator image keeps the store: the same Pods, the key still there', async () => {
    const before = new Map((await storePods()).map((p) => [p.metadata.name!, p.metadata.uid]));
    const nextTag = 'kvpool/kvpool-operator:upgrade-test';
    // The new image is the same contents under another tag, added on every node with the node's ctr.
    for (const node of e.cluster.nodes) {
      await e.cluster
        .node(node)
        .exec(['ctr', '-n', 'k8s.io', 'images', 'tag', operatorImage, `docker.io/${nextTag}`]);
    }
    await e.cluster.helm.run([
      'upgrade',
      'kvpool',
      chartDir,
      '--namespace',
      ns,
      '--reuse-values',
      '--set',
      'operator.image.tag=upgrade-test',
      '--wait',
      '--timeout',
      '5m',
    ]);
    const operators = await waitFor(
      async () => {
        const now = await pods('app.kubernetes.io/component=operator');
        return now.length === 2 && now.every((p) => p.spec.containers[0]!.image === nextTag)
          ? now
          : undefined;
      },
      { what: 'both operator Pods on the new image' },
    );
    assert.equal(operators.length, 2);
    const after = new Map((await storePods()).map((p) => [p.metadata.name!, p.metadata.uid]));
    assert.deepEqual(after, before, 'the store Pods are the same Pods');
    await waitFor(
      async () => {
        const out = await e.kubectl(['get', 'kvcb', 'mooncake-dram', '--no-headers']);
        return /\sReady\s.*\s16Gi\s/.test(out) ? out : undefined;
      },
      { what: 'the backend Ready with 16Gi under the new operator' },
    );
    const [got] = await store('get', 'before-upgrade');
    assert.ok(got && 'data' in got);
    assert.equal(got.data.toString(), 'value of before-upgrade');
  });

  it('helm uninstall: no webhook in the way, every object released with an Event, a namespace deletes', async () => {
    await waitFor(
      async () => {
        const out = await e.kubectl([
          '-n',
          'team-a',
          'get',
          'kvcpb',
          'team-a',
          '-o',
          'jsonpath={.metadata.finalizers}',
        ]);
        return out.includes('kvpool-protection') ? true : undefined;
      },
      { what: 'the Binding held by kvpool’s finalizer' },
    );
    const storeBefore = new Map((await storePods()).map((p) => [p.metadata.name!, p.metadata.uid]));
    await e.cluster.helm.run(['uninstall', 'kvpool', '--namespace', ns, '--wait', '--timeout', '5m']);

    for (const kind of ['validatingwebhookconfiguration', 'mutatingwebhookconfiguration']) {
      const names = await e.kubectl(['get', kind, '-o', 'jsonpath={.items[*].metadata.name}']);
      for (const name of [validatingConfigurationName, mutatingConfigurationName])
        assert.ok(!names.includes(name));
    }
    for (const [kind, name, where] of [
      ['kvcb', 'mooncake-dram', []],
      ['kvcp', 'shared-dram', []],
      ['kvcpb', 'team-a', ['-n', 'team-a']],
    ] as const) {
      assert.equal(
        await e.kubectl([...where, 'get', kind, name, '-o', 'jsonpath={.metadata.finalizers}']),
        '',
      );
      const events = await e.kubectl([
        'get',
        'events',
        '-A',
        '--field-selector',
        `involvedObject.name=${name},reason=KvpoolUninstalled`,
        '-o',
        'jsonpath={.items[*].message}',
      ]);
      assert.match(events, /kvpool was uninstalled/);
    }
    // Edits and opted-in Pods go through: nothing calls an operator that is gone.
    await e.kubectl(['-n', 'team-a', 'label', 'kvcpb', 'team-a', 'edited=after-uninstall']);
    await e.kubectl(['-n', 'team-a', 'delete', 'kvcpb', 'team-a', '--wait=true', '--timeout=60s']);
    await e.kubectl(['delete', 'namespace', 'team-a', '--wait=true', '--timeout=120s']);
    const storeAfter = new Map((await storePods()).map((p) => [p.metadata.name!, p.metadata.uid]));
    assert.deepEqual(storeAfter, storeBefore, 'the store keeps running');
  });
});
