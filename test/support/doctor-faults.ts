// The faults of the troubleshooting table, made for real on a local cluster that runs the walkthrough
// through Step 6: what `kubectl kvpool doctor` must find, with the evidence each finding names.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { localInstanceType } from '../../local/cluster.ts';
import type { KubeObject } from '../../src/kube/object.ts';
import type { E2ECluster } from './local-cluster.ts';
import { waitFor } from './wait.ts';

const v1 = 'worker.gpustack.ai/v1';

/**
 * Makes every fault but the held deletion: a leader image that cannot be pulled (and its pool's
 * ledger), a missing, an unwritable and a dirty tier directory, a store no member joins (its grant is
 * zero), two Bindings racing for one domain, and an SGLang engine on the 0.3.13 store. Returns the
 * two racing Bindings. Nodes labelled `kvcache=true` and namespaces team-a and team-b must exist.
 */
export async function makeDoctorFaults(e: E2ECluster): Promise<[string, string]> {
  const dir = (node: string, path: string) => join(e.cluster.root, 'nodes', node, path);
  const [one, two] = e.cluster.nodes as [string, string];
  for (const node of e.cluster.nodes) mkdirSync(dir(node, '/var/lib'), { recursive: true });
  // One tier path, two faults: on one node it holds an earlier backend's file, on the other the
  // store's user cannot write it.
  const faults = '/var/lib/kvcache-faults';
  execFileSync('install', ['-d', '-o', '65532', '-g', '0', '-m', '0750', dir(one, faults)]);
  writeFileSync(join(dir(one, faults), 'left-over.bucket'), 'old');
  execFileSync('install', ['-d', '-o', '0', '-g', '0', '-m', '0750', dir(two, faults)]);
  await e.kubectl(['label', 'node', one, 'kvpool.test/disk-missing=true']);
  // A tier member registers a 1 GiB buffer: its memory limit (the segment plus 1Gi) needs a segment
  // of some size, or the kernel kills it before it reaches the directory.
  const disk = (name: string, selector: string, path: string, segment = '64Mi') => `
apiVersion: ${v1}
kind: KVCacheBackend
metadata: {name: ${name}}
spec:
  connection:
    managed:
      leader: {}
      members:
        - {nodeSelector: {${selector}}, medium: DRAM, capacityPerMember: ${segment}, localDisks: [{path: ${path}, capacity: 1Gi}]}
---`;
  await e.kubectl(
    ['apply', '--server-side', '-f', '-'],
    `${disk('disk-missing', 'kvpool.test/disk-missing: "true"', '/var/lib/kvcache-missing')}${disk('disk-faults', 'kvcache: "true"', faults, '512Mi')}
apiVersion: ${v1}
kind: KVCacheBackend
metadata: {name: bad-image}
spec:
  image: registry.invalid/kvpool/nothing:1
  connection:
    managed:
      leader: {}
      members: [{nodeSelector: {kvpool.test/none: "true"}, medium: DRAM, capacityPerMember: 64Mi}]
---
apiVersion: ${v1}
kind: KVCacheBackend
metadata: {name: nowhere}
spec:
  connection:
    managed:
      leader: {}
      members: [{nodeSelector: {kvpool.test/none: "true"}, medium: DRAM, capacityPerMember: 64Mi}]
---
apiVersion: ${v1}
kind: KVCachePool
metadata: {name: bad-pool}
spec: {backends: [bad-image], quota: {total: 1Gi}}
---
apiVersion: ${v1}
kind: KVCachePool
metadata: {name: empty-pool}
spec: {backends: [nowhere], quota: {total: 1Gi}}
---
apiVersion: ${v1}
kind: KVCachePoolBinding
metadata: {name: starved, namespace: team-b}
spec: {poolRef: {name: empty-pool}, quota: {ceiling: 512Mi}, domain: {name: starved, blockSize: 16, dtype: bfloat16}}
---
apiVersion: ${v1}
kind: ModelDeployment
metadata: {name: sglang-chat, namespace: team-b}
spec:
  model: {name: Qwen/Qwen2.5-7B-Instruct}
  engine: {name: SGLang, version: 0.5.18}
  kvCache: {poolRef: {name: team-b}}
  roles: [{name: server, replicas: 1, instanceType: ${localInstanceType}, resources: {accelerator: "1"}}]
`,
  );
  // Two claims of one domain, as when two creates pass admission together (the docs say they can).
  return claimOneDomainTwice(e);
}

/**
 * Two Bindings claiming one new domain, the state two creates racing past admission leave. The race
 * is made certain: the Binding rule is taken out of the validating configuration (as an administrator
 * could) while both are created, then put back, and a third claim is refused again.
 */
async function claimOneDomainTwice(e: E2ECluster): Promise<[string, string]> {
  const config = 'kvpool-validation';
  const hook = 'kvcachepoolbindings.worker.gpustack.ai';
  const webhooks = JSON.parse(
    await e.kubectl(['get', 'validatingwebhookconfiguration', config, '-o', 'jsonpath={.webhooks}']),
  ) as { name: string }[];
  const at = webhooks.findIndex((w) => w.name === hook);
  assert.ok(at >= 0, `${config} has the ${hook} webhook`);
  const patch = (op: object) =>
    e.kubectl(['patch', 'validatingwebhookconfiguration', config, '--type=json', '-p', JSON.stringify([op])]);
  const claim = (namespace: string, name: string) =>
    e.cluster.client.create({
      apiVersion: v1,
      kind: 'KVCachePoolBinding',
      metadata: { name, namespace },
      spec: {
        poolRef: { name: 'shared-dram' },
        quota: { ceiling: '1Gi' },
        domain: { name: 'raced', blockSize: 16, dtype: 'bfloat16' },
      },
    } as KubeObject);
  await patch({ op: 'test', path: `/webhooks/${at}/name`, value: hook });
  await patch({ op: 'remove', path: `/webhooks/${at}` });
  try {
    // The apiserver picks up a configuration change within moments: retry until the claim lands.
    await claim('team-a', 'race');
    await waitFor(
      () =>
        claim('team-b', 'race').then(
          () => true,
          () => undefined,
        ),
      { what: 'the second claim admitted while the rule is out', timeoutMs: 30_000 },
    );
  } finally {
    await patch({ op: 'add', path: `/webhooks/${at}`, value: webhooks[at] });
  }
  await waitFor(
    () =>
      claim('team-b', 'race-third').then(
        async () => {
          await e.kubectl(['-n', 'team-b', 'delete', 'kvcpb', 'race-third']);
          return undefined;
        },
        (err: Error) => (/domain "raced" is already claimed/.test(String(err.message)) ? true : undefined),
      ),
    { what: 'a third claim refused once the rule is back', timeoutMs: 30_000 },
  );
  return ['team-a/race', 'team-b/race'];
}
