// kvpool installed without Helm, as docs/install.md says (deploy/namespace.yaml, crds.yaml and
// install.yaml), then uninstalled as charts/kvpool/README.md says (`kvpool uninstall`, then `kubectl
// delete -f deploy/install.yaml`): the backend, pool, Binding and a Setting are still there, and the
// store runs on in the same Pods with the key written before; installed again, the operator takes
// them back.

import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { projectRoot } from '../../images/toolchain.ts';
import { awaitAdmissionInForce } from '../../local/admission-in-force.ts';
import { installCommand, installNamespace, uninstallCommand } from '../../scripts/manifests.ts';
import type { KubeObject } from '../../src/kube/object.ts';
import { finalizer } from '../../src/vocabulary/identity.ts';
import { mutatingConfigurationName, validatingConfigurationName } from '../../src/webhooks/configuration.ts';
import { type E2ECluster, startE2ECluster } from '../support/local-cluster.ts';
import { podsMatching } from '../support/pods.ts';
import { seedText } from '../support/seed.ts';
import { runStoreClient } from '../support/store-client.ts';
import { waitFor } from '../support/wait.ts';

const ns = installNamespace;
type Pod = KubeObject & { status?: { podIP?: string; containerStatuses?: { ready?: boolean }[] } };

/** A documented `kubectl ...` command as kubectl's arguments, its deploy/ paths from the checkout. */
const argsOf = (command: string) =>
  command
    .split(' ')
    .slice(1)
    .map((a) => (a.startsWith('deploy/') ? join(projectRoot, a) : a));

/** The objects a user made, by what they are, with their uids. */
const userObjects = [
  ['kvcb', 'mooncake-dram', []],
  ['kvcp', 'shared-dram', []],
  ['kvcpb', 'team-a', ['-n', 'team-a']],
  ['setting', 'instance-general-resources-overcommit', ['-n', ns]],
] as const;

describe('kvpool without Helm: the documented uninstall keeps every object and the store', () => {
  let e: E2ECluster;
  const pods = (selector: string) => podsMatching<Pod>(e.cluster.client, ns, selector);
  const storePods = async () =>
    new Map(
      (await pods('app.kubernetes.io/name=kv-cache-backend')).map((p) => [
        p.metadata.name!,
        { uid: p.metadata.uid, ready: p.status?.containerStatuses?.every((c) => c.ready) ?? false },
      ]),
    );
  const store = async (op: 'put' | 'get', key: string) => {
    const leaders = await pods('app.kubernetes.io/component=leader');
    const ip = leaders.find((p) => p.status?.containerStatuses?.[0]?.ready)?.status?.podIP;
    return runStoreClient({ master: `${ip}:50051`, host: e.cluster.hostAddress, tenant: 'default' }, [
      op === 'put' ? { op, key, data: Buffer.from(`value of ${key}`) } : { op, key },
    ]);
  };
  const uids = async () => {
    const found: Record<string, string> = {};
    for (const [kind, name, where] of userObjects)
      found[`${kind}/${name}`] = await e.kubectl([
        ...where,
        'get',
        kind,
        name,
        '-o',
        'jsonpath={.metadata.uid}',
      ]);
    return found;
  };
  const backendReady = () =>
    waitFor(
      async () => {
        const out = await e.kubectl(['get', 'kvcb', 'mooncake-dram', '--no-headers']);
        return /\sReady\s.*\s16Gi\s/.test(out) ? out : undefined;
      },
      { what: 'kubectl get kvcb shows Ready with 16Gi', timeoutMs: 180_000 },
    );
  const bindingReady = () =>
    waitFor(
      async () => {
        const phase = await e.kubectl([
          '-n',
          'team-a',
          'get',
          'kvcpb',
          'team-a',
          '-o',
          'jsonpath={.status.phase}',
        ]);
        return phase === 'Ready' ? true : undefined;
      },
      { what: 'the Binding Ready with its grant' },
    );
  const install = async () => {
    await e.kubectl(argsOf(installCommand));
    await e.kubectl(['-n', ns, 'rollout', 'status', 'deployment/kvpool-operator', '--timeout=300s']);
    await awaitAdmissionInForce(e.cluster.client, 120_000);
  };

  before(async () => {
    e = await startE2ECluster({ installKvpool: false });
  });
  after(() => e?.stop());

  it('installs with the documented kubectl command and runs Steps 1 and 2, with a Setting of its own', async () => {
    await install();
    await e.kubectl(['apply', '--server-side', '-f', '-'], seedText('step-1-store.yaml'));
    await backendReady();
    await e.kubectl(['create', 'namespace', 'team-a']);
    await e.kubectl(['apply', '--server-side', '-f', '-'], seedText('step-2-pool-binding.yaml'));
    await bindingReady();
    // A Setting a user set (to the value it defaults to, so the store renders the same).
    await e.kubectl(
      ['apply', '--server-side', '-f', '-'],
      `apiVersion: gpustack.ai/v1\nkind: Setting\nmetadata: {name: instance-general-resources-overcommit, namespace: ${ns}}\nspec: {value: "true"}\n`,
    );
    assert.deepEqual(await store('put', 'before-uninstall'), [{ rc: 0 }]);
  });

  it('`kvpool uninstall`, then `kubectl delete -f deploy/install.yaml`: the objects and the store stay', async () => {
    const objectsBefore = await uids();
    const storeBefore = await storePods();
    assert.ok(storeBefore.size >= 3, `a leader and two members: ${[...storeBefore.keys()]}`);
    await promisify(execFile)(
      process.execPath,
      [
        join(projectRoot, 'src/kvpool/main.ts'),
        'uninstall',
        '--kubeconfig',
        e.cluster.kubeconfigPath,
        '--namespace',
        ns,
        '--deployment',
        'kvpool-operator',
      ],
      { maxBuffer: 16 << 20 },
    );
    await e.kubectl(argsOf(uninstallCommand));

    // The operator is gone: no Deployment, no Pod, no webhook configuration.
    assert.equal(
      await e.kubectl(['-n', ns, 'get', 'deployment', 'kvpool-operator', '--ignore-not-found', '-o', 'name']),
      '',
    );
    await waitFor(
      async () => ((await pods('app.kubernetes.io/component=operator')).length ? undefined : true),
      {
        what: 'no operator Pod left',
      },
    );
    for (const kind of ['validatingwebhookconfiguration', 'mutatingwebhookconfiguration']) {
      const names = await e.kubectl(['get', kind, '-o', 'jsonpath={.items[*].metadata.name}']);
      for (const name of [validatingConfigurationName, mutatingConfigurationName])
        assert.ok(!names.includes(name), `${kind} ${name}`);
    }
    // What the users made is still there, the same objects, and the store runs on in the same Pods.
    assert.match(await e.kubectl(['get', 'crd', '-o', 'name']), /kvcachebackends\.worker\.gpustack\.ai/);
    assert.equal(await e.kubectl(['get', 'namespace', ns, '-o', 'jsonpath={.status.phase}']), 'Active');
    assert.deepEqual(await uids(), objectsBefore);
    // Long enough for a garbage collector that would delete the store to have done so.
    await new Promise((r) => setTimeout(r, 10_000));
    const storeAfter = await storePods();
    assert.deepEqual(
      [...storeAfter].map(([n, p]) => [n, p.uid]),
      [...storeBefore].map(([n, p]) => [n, p.uid]),
    );
    assert.ok(
      [...storeAfter.values()].every((p) => p.ready),
      'every store Pod still ready',
    );
    const [got] = await store('get', 'before-uninstall');
    assert.ok(got && 'data' in got, JSON.stringify(got));
    assert.equal(got.data.toString(), 'value of before-uninstall');
  });

  it('installed again with the same command, the operator takes them back: finalizers, Ready, the same store', async () => {
    const storeBefore = await storePods();
    await install();
    await backendReady();
    for (const [kind, name, where] of userObjects.filter(([kind]) => kind !== 'setting')) {
      await waitFor(
        async () => {
          const finalizers = await e.kubectl([
            ...where,
            'get',
            kind,
            name,
            '-o',
            'jsonpath={.metadata.finalizers}',
          ]);
          return finalizers.includes(finalizer) ? true : undefined;
        },
        { what: `${kind} ${name} held by kvpool's finalizer again` },
      );
    }
    await bindingReady();
    const storeAfter = await storePods();
    assert.deepEqual(
      [...storeAfter].map(([n, p]) => [n, p.uid]),
      [...storeBefore].map(([n, p]) => [n, p.uid]),
    );
    const [got] = await store('get', 'before-uninstall');
    assert.ok(got && 'data' in got, JSON.stringify(got));
    assert.equal(got.data.toString(), 'value of before-uninstall');
  });
});
