// What the local node agent reports for a container that could not start, exited or backs off.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  crashLoopBackOff,
  exitCodeOf,
  nextBackoff,
  prepareFailure,
  terminatedState,
} from '../../src/local/node-agent/container-outcome.ts';
import { ContainerConfigError, ImageMissingError, MountError } from '../../src/local/node-agent/errors.ts';

describe('container outcomes', () => {
  it('maps a failed preparation to the kubelet reason, event and retry delay', () => {
    assert.deepEqual(prepareFailure(new ImageMissingError('not on this node'), 'store:1'), {
      waiting: { reason: 'ErrImagePull', message: 'not on this node' },
      event: 'Failed to pull image "store:1": not on this node',
      retryMs: 5000,
    });
    assert.equal(
      prepareFailure(new ContainerConfigError('x'), 'i').waiting.reason,
      'CreateContainerConfigError',
    );
    assert.equal(prepareFailure(new MountError('x'), 'i').waiting.reason, 'CreateContainerError');
    assert.deepEqual(prepareFailure(new Error('boom'), 'i'), {
      waiting: { reason: 'RunContainerError', message: 'boom' },
      event: 'Error: boom',
      retryMs: 2000,
    });
  });

  it('reports a killed process as 128 + its signal, and a failed launch as a StartError', () => {
    assert.equal(exitCodeOf(3, null), 3);
    assert.equal(exitCodeOf(null, 'SIGKILL'), 137);
    assert.equal(exitCodeOf(null, null), 255);
    const facts = { message: undefined, startedAt: 0, finishedAt: 1000, containerID: 'kvpool://a' };
    const killed = terminatedState({ ...facts, code: null, signal: 'SIGTERM', launched: true });
    assert.deepEqual([killed.exitCode, killed.signal, killed.reason], [143, 15, 'Error']);
    assert.equal(terminatedState({ ...facts, code: 0, signal: null, launched: true }).reason, 'Completed');
    const start = terminatedState({
      ...facts,
      code: 1,
      signal: 'SIGTERM',
      launched: false,
      message: 'no such file',
    });
    assert.deepEqual(
      [start.exitCode, start.signal, start.reason, start.message],
      [128, undefined, 'StartError', 'no such file'],
    );
  });

  it('doubles the back-off up to the cap and starts afresh after a long run', () => {
    const limits = { initialMs: 10_000, maxMs: 300_000, resetAfterMs: 600_000 };
    assert.deepEqual(nextBackoff(undefined, 5, limits), { appliedMs: 0, nextMs: 10_000 });
    assert.deepEqual(nextBackoff(10_000, 5, limits), { appliedMs: 10_000, nextMs: 20_000 });
    assert.deepEqual(nextBackoff(160_000, 5, limits), { appliedMs: 160_000, nextMs: 300_000 });
    assert.deepEqual(nextBackoff(300_000, 600_000, limits), { appliedMs: 0, nextMs: 10_000 });
    assert.equal(
      crashLoopBackOff(20_000, 'c', 'ns/p').message,
      'back-off 20s restarting failed container=c pod=ns/p',
    );
  });
});
