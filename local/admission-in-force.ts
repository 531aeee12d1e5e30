// Whether the apiserver routes admission to this operator yet. The apiserver loads webhook
// configurations through its own watch, so one just applied is not in force at once: a dry-run create
// of an object each configuration refuses tells when it is (nothing is stored).

import type { Pod } from 'kubernetes-types/core/v1.js';
import type { KVCacheBackendSpec } from '../src/api/kvcache-backend.ts';
import { injectLabel } from '../src/inject/types.ts';
import type { KubeClient } from '../src/kube/client.ts';
import { ApiError } from '../src/kube/errors.ts';
import type { KubeObject } from '../src/kube/object.ts';
import { waitFor } from '../src/kube/wait-for.ts';

/** A backend the validating webhook refuses (a reserved master flag); admission judges it before the schema's defaults matter. */
type RefusedBackend = KubeObject<{ spec: Partial<KVCacheBackendSpec> }>;

const probes: { configuration: string; object: RefusedBackend | KubeObject<Pod>; refusal: string }[] = [
  {
    configuration: 'validating',
    object: {
      apiVersion: 'worker.gpustack.ai/v1',
      kind: 'KVCacheBackend',
      metadata: { name: 'kvpool-admission-probe' },
      spec: {
        connection: {
          managed: {
            leader: { extraArgs: ['-rpc_port=1'] },
            members: [
              { nodeSelector: { 'kubernetes.io/os': 'linux' }, medium: 'DRAM', capacityPerMember: '1Gi' },
            ],
          },
        },
      },
    },
    // The rule's own words: the webhook's name is also in the apiserver's error when the call itself
    // failed (a CA bundle not patched in yet), which would count a failing webhook as in force.
    refusal: 'the leader always serves RPC on 50051',
  },
  {
    configuration: 'mutating',
    object: {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'kvpool-admission-probe', namespace: 'default', labels: { [injectLabel]: 'true' } },
      spec: { containers: [{ name: 'probe', image: 'probe' }] },
    },
    refusal: 'KV cache injection',
  },
];

/** The configurations the apiserver does not yet call (empty once admission is in force). */
export async function admissionNotInForce(client: KubeClient): Promise<string[]> {
  const missing: string[] = [];
  for (const probe of probes) {
    const refused = await client.create(probe.object, { dryRun: true }).then(
      () => false,
      (err: unknown) => err instanceof ApiError && err.message.includes(probe.refusal),
    );
    if (!refused) missing.push(probe.configuration);
  }
  return missing;
}

/** Waits until the apiserver calls both webhook configurations. */
export async function awaitAdmissionInForce(client: KubeClient, timeoutMs: number): Promise<void> {
  let missing: string[] = [];
  await waitFor(
    async () => {
      missing = await admissionNotInForce(client);
      return missing.length === 0 ? true : undefined;
    },
    { what: 'the apiserver to call the admission webhooks', timeoutMs },
  ).catch((err: unknown) => {
    throw new Error(`${err instanceof Error ? err.message : err} (not yet called: ${missing.join(', ')})`);
  });
}
