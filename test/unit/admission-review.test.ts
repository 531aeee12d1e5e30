// AdmissionReview v1 in, response out: uid echoed, refusals carry the message, patches are base64 JSONPatch.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { allow, deny, review } from '../../src/kube/webhook-server.ts';

const request = {
  apiVersion: 'admission.k8s.io/v1',
  kind: 'AdmissionReview',
  request: {
    uid: '705ab4f5-6393-11e8-b7cc-42010a800002',
    kind: { group: 'worker.gpustack.ai', version: 'v1', kind: 'KVCachePool' },
    resource: { group: 'worker.gpustack.ai', version: 'v1', resource: 'kvcachepools' },
    name: 'shared-dram',
    operation: 'CREATE',
    object: { metadata: { name: 'shared-dram' } },
  },
};

describe('review', () => {
  it('echoes the uid and refuses with the handler message', async () => {
    const out = await review(request, () =>
      deny('spec.backends[0]: backend "x" does not exist: create it first'),
    );
    assert.deepEqual(out, {
      apiVersion: 'admission.k8s.io/v1',
      kind: 'AdmissionReview',
      response: {
        uid: request.request.uid,
        allowed: false,
        status: {
          code: 422,
          message: 'spec.backends[0]: backend "x" does not exist: create it first',
          reason: 'Invalid',
        },
      },
    });
  });

  it('allows with warnings and a base64 JSONPatch', async () => {
    const out = await review(request, () =>
      allow(['careful'], [{ op: 'add', path: '/metadata/labels', value: {} }]),
    );
    const response = out.response as Record<string, unknown>;
    assert.equal(response.allowed, true);
    assert.deepEqual(response.warnings, ['careful']);
    assert.equal(response.patchType, 'JSONPatch');
    assert.deepEqual(JSON.parse(Buffer.from(response.patch as string, 'base64').toString()), [
      { op: 'add', path: '/metadata/labels', value: {} },
    ]);
  });

  it('turns a handler crash into a refusal, never an allow', async () => {
    const out = await review(request, () => {
      throw new Error('boom');
    });
    const response = out.response as { allowed: boolean; status: { code: number; message: string } };
    assert.equal(response.allowed, false);
    assert.equal(response.status.code, 500);
    assert.match(response.status.message, /boom/);
  });

  it('rejects a body that is not an AdmissionReview', async () => {
    await assert.rejects(
      review({}, () => allow()),
      /not an AdmissionReview/,
    );
  });
});
