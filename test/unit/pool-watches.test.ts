// Which Binding and pool events wake the pool controller: not its own status writes coming back.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { statusOnly } from '../../src/controllers/pool/watches.ts';
import type { KubeObject } from '../../src/kube/object.ts';

const obj = (meta: Partial<KubeObject['metadata']>, status?: object): KubeObject =>
  ({
    apiVersion: 'worker.gpustack.ai/v1',
    kind: 'KVCachePoolBinding',
    metadata: { name: 'b', namespace: 'team-a', generation: 1, finalizers: ['f'], ...meta },
    ...(status ? { status } : {}),
  }) as KubeObject;

describe('statusOnly', () => {
  it('is true for an update that moved only the status', () => {
    assert.equal(statusOnly(obj({ resourceVersion: '2' }, { phase: 'Ready' }), 'update', obj({})), true);
  });
  it('is false when the spec moved (a new generation)', () => {
    assert.equal(statusOnly(obj({ generation: 2 }), 'update', obj({})), false);
  });
  it('is false when deletion starts or a finalizer comes or goes', () => {
    assert.equal(statusOnly(obj({ deletionTimestamp: '2026-01-01T00:00:00Z' }), 'update', obj({})), false);
    assert.equal(statusOnly(obj({ finalizers: [] }), 'update', obj({})), false);
  });
  it('is false when labels or annotations moved (a user annotating an object to have it looked at again)', () => {
    assert.equal(statusOnly(obj({ annotations: { touched: '1' } }), 'update', obj({})), false);
    assert.equal(statusOnly(obj({ labels: { team: 'a' } }), 'update', obj({ labels: { team: 'b' } })), false);
  });
  it('is false for adds, deletes and resyncs', () => {
    for (const e of ['add', 'delete', 'resync']) assert.equal(statusOnly(obj({}), e, obj({})), false, e);
  });
});
