// When the local cluster counts admission as in force: only a refusal written by the operator's own
// rules counts, never an apiserver error that merely names the webhook (a call that failed TLS because
// the CA bundle was not patched in yet names it too).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { admissionNotInForce } from '../../local/admission-in-force.ts';
import type { KubeClient } from '../../src/kube/client.ts';
import { ApiError } from '../../src/kube/errors.ts';

/** A client whose dry-run creates fail with the message the apiserver gives for each kind. */
const clientFailing = (byKind: Record<string, string>) =>
  ({
    create: async (o: { kind: string }) => {
      throw new ApiError(400, 'BadRequest', byKind[o.kind] ?? 'created');
    },
  }) as unknown as KubeClient;

const webhookRefusal = {
  KVCacheBackend:
    'admission webhook "kvcachebackends.worker.gpustack.ai" denied the request: spec.connection.managed.leader.extraArgs[0]: -rpc_port is derived from the backend (the leader always serves RPC on 50051); remove it',
  Pod: 'admission webhook "pods.worker.gpustack.ai" denied the request: KV cache injection: no Binding',
};

describe('admissionNotInForce', () => {
  it('counts both configurations in force when the operator’s rules refuse both probes', async () => {
    assert.deepEqual(await admissionNotInForce(clientFailing(webhookRefusal)), []);
  });

  it('does not count a webhook the apiserver could not call (its CA bundle not patched yet)', async () => {
    const untrusted = {
      ...webhookRefusal,
      KVCacheBackend:
        'Internal error occurred: failed calling webhook "kvcachebackends.worker.gpustack.ai": failed to call webhook: Post "https://kvpool-webhook.gpustack-system.svc:443/validate-kvcachebackend?timeout=10s": tls: failed to verify certificate: x509: certificate signed by unknown authority',
    };
    assert.deepEqual(await admissionNotInForce(clientFailing(untrusted)), ['validating']);
  });

  it('does not count a probe the apiserver accepted', async () => {
    const client = { create: async () => ({}) } as unknown as KubeClient;
    assert.deepEqual(await admissionNotInForce(client), ['validating', 'mutating']);
  });
});
