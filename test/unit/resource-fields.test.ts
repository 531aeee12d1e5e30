// resourceFieldRef values as the kubelet writes them: the limit (or the node's allocatable amount),
// divided by the divisor, rounded up, exactly.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ContainerConfigError } from '../../src/local/node-agent/errors.ts';
import type { Container, Pod } from '../../src/local/node-agent/pod-types.ts';
import { resourceFieldValue } from '../../src/local/node-agent/resource-fields.ts';

const container: Container = {
  name: 'store',
  image: 'kvpool.local/store',
  resources: { limits: { cpu: '1500m', memory: '8Gi' }, requests: { memory: '100M' } },
};
const pod = { metadata: { name: 'p' }, spec: { containers: [container] } } as unknown as Pod;
const allocatable = { cpu: '2', memory: '24Gi' };
const value = (resource: string, divisor?: string) =>
  resourceFieldValue(pod, container, { resource, ...(divisor ? { divisor } : {}) }, allocatable);

describe('resourceFieldValue', () => {
  it('divides the limit by the divisor and rounds up', () => {
    assert.equal(value('limits.cpu'), '2');
    assert.equal(value('limits.cpu', '1m'), '1500');
    assert.equal(value('limits.memory'), '8589934592');
    assert.equal(value('limits.memory', '1Mi'), '8192');
    assert.equal(value('requests.memory', '1Mi'), '96');
  });

  it('falls back to the node allocatable amount for an unset limit, and to 0 for an unset request', () => {
    const bare: Container = { name: 'store', image: 'kvpool.local/store' };
    const field = (resource: string) => resourceFieldValue(pod, bare, { resource }, allocatable);
    assert.equal(field('limits.memory'), String(24 * 2 ** 30));
    assert.equal(field('requests.cpu'), '0');
  });

  it('names a malformed quantity as the container’s configuration error', () => {
    assert.throws(() => value('limits.cpu', '1 m'), ContainerConfigError);
  });
});
