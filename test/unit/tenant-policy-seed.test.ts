// Where a new leader's tenant policy comes from: the seed ConfigMap as the API answered, or, when the
// read failed, its mounted copy; and how a failed read is named in the log.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ApiError } from '../../src/kube/errors.ts';
import { describeReadError } from '../../src/kvpool-store/seed-configmap.ts';
import { emptyPolicy, policyFromApi } from '../../src/kvpool-store/tenant-policy-seed.ts';

const seed = 'version: 1\ntenants:\n  - name: someone-else\n    quota: 4194304\n';

describe('policyFromApi', () => {
  it('takes the API’s seed as it stands', () => {
    assert.equal(policyFromApi({ kind: 'found', policy: seed }), seed);
  });

  it('starts from the empty ledger when the API has no seed, as a mount of an absent ConfigMap would', () => {
    assert.equal(policyFromApi({ kind: 'absent' }), emptyPolicy);
    assert.equal(policyFromApi({ kind: 'found', policy: undefined }), emptyPolicy);
  });

  it('leaves the policy to the mounted copy when the read failed', () => {
    assert.equal(policyFromApi({ kind: 'failed', error: '403 Forbidden: no' }), undefined);
  });
});

describe('describeReadError', () => {
  it('names the API’s status and reason', () => {
    const refused = new ApiError(403, 'Forbidden', 'configmaps "x" is forbidden');
    assert.equal(describeReadError(refused), '403 Forbidden: configmaps "x" is forbidden');
  });

  it('names a timeout and a refused connection by their name and code', () => {
    const timeout = new DOMException('The operation was aborted due to timeout', 'TimeoutError');
    assert.equal(describeReadError(timeout), 'TimeoutError: The operation was aborted due to timeout');
    const refused = Object.assign(new Error('connect ECONNREFUSED 10.0.0.1:6443'), { code: 'ECONNREFUSED' });
    assert.equal(describeReadError(refused), 'Error ECONNREFUSED: connect ECONNREFUSED 10.0.0.1:6443');
  });
});
