// kvpool applies a child only over an object it controls: anything else holding the name is left as
// it is, and the message names it and the fix.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { KubeObject, OwnerReference } from '../../src/kube/object.ts';
import { childConflictMessage, claimChild } from '../../src/vocabulary/child-ownership.ts';

const uid = 'md-uid-1';

function service(ownerReferences?: OwnerReference[]): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: 'qwen', namespace: 'team-a', ...(ownerReferences ? { ownerReferences } : {}) },
  };
}

const ref = (over: Partial<OwnerReference> = {}): OwnerReference => ({
  apiVersion: 'worker.gpustack.ai/v1',
  kind: 'ModelDeployment',
  name: 'qwen',
  uid,
  controller: true,
  ...over,
});

describe('claimChild', () => {
  it('may create a child whose name is free', () => {
    assert.deepEqual(claimChild(undefined, uid), { kind: 'absent' });
  });

  it('may apply over an object this very owner controls', () => {
    assert.deepEqual(claimChild(service([ref()]), uid), { kind: 'ours' });
  });

  it('leaves alone an object nobody controls', () => {
    assert.deepEqual(claimChild(service(), uid), {
      kind: 'foreign',
      conflict: { kind: 'Service', namespace: 'team-a', name: 'qwen' },
    });
  });

  it('leaves alone an object another owner controls, even one of the same kind and name (deleted and created again)', () => {
    const claim = claimChild(service([ref({ uid: 'md-uid-0' })]), uid);
    assert.deepEqual(claim, {
      kind: 'foreign',
      conflict: { kind: 'Service', namespace: 'team-a', name: 'qwen', controller: 'ModelDeployment qwen' },
    });
  });

  it('leaves alone an object this owner only co-owns without controlling it', () => {
    assert.equal(claimChild(service([ref({ controller: false })]), uid).kind, 'foreign');
    assert.equal(claimChild(service([ref({ controller: undefined })]), uid).kind, 'foreign');
  });

  it('takes a plain owner reference for its own when the child is rendered co-owned', () => {
    assert.equal(claimChild(service([ref({ controller: false })]), uid, { coOwned: true }).kind, 'ours');
    assert.equal(
      claimChild(service([ref({ controller: false, uid: 'other' })]), uid, { coOwned: true }).kind,
      'foreign',
    );
    assert.equal(claimChild(service(), uid, { coOwned: true }).kind, 'foreign');
  });

  it('claims nothing for an owner without a uid', () => {
    assert.equal(claimChild(service([ref({ uid: '' })]), '').kind, 'foreign');
    assert.equal(claimChild(service([ref()]), undefined).kind, 'foreign');
  });

  it("recognizes an object of kvpool's own making only when it carries no owner at all", () => {
    const always = () => true;
    assert.equal(claimChild(service(), uid, { recognized: always }).kind, 'ours');
    assert.equal(claimChild(service([ref({ uid: 'other' })]), uid, { recognized: always }).kind, 'foreign');
    assert.equal(claimChild(service(), uid, { recognized: () => false }).kind, 'foreign');
  });
});

describe('childConflictMessage', () => {
  it('names the object, who controls it, that it is left alone, and the fix', () => {
    assert.equal(
      childConflictMessage([{ kind: 'Service', namespace: 'team-a', name: 'qwen' }], 'ModelDeployment'),
      "Service team-a/qwen (no controller owns it) already exists and is not this ModelDeployment's own, so kvpool leaves it as it is and applies nothing over it: rename or delete that Service, or create the ModelDeployment under another name",
    );
  });

  it('names whose object it is not when another object reports it', () => {
    assert.match(
      childConflictMessage(
        [{ kind: 'ConfigMap', namespace: 'gpustack-system', name: 'store-tenant-registry' }],
        'KVCacheBackend',
        'KVCacheBackend store',
      ),
      /is not KVCacheBackend store's own, .* or create the KVCacheBackend under another name$/,
    );
  });

  it('names every object when several are taken', () => {
    const m = childConflictMessage(
      [
        { kind: 'Service', namespace: 'gpustack-system', name: 'store-leader' },
        {
          kind: 'Deployment',
          namespace: 'gpustack-system',
          name: 'store-leader',
          controller: 'KVCacheBackend store',
        },
      ],
      'KVCacheBackend',
    );
    assert.match(
      m,
      /^Service gpustack-system\/store-leader \(no controller owns it\), Deployment gpustack-system\/store-leader \(controlled by KVCacheBackend store\) already exist/,
    );
    assert.match(m, /rename or delete them, or create the KVCacheBackend under another name$/);
  });
});
