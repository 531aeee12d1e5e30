// ModelDeployment admission of what the operator would create with its own rights: nothing Pod Security
// 'baseline' forbids, with the way out (an engine Deployment of the user's own).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { validateModelDeployment } from '../../src/webhooks/modeldeployment-rules.ts';
import { md, modelDeploymentContext } from '../builders/index.ts';
import { errorsOf } from '../support/admission-verdicts.ts';

describe('validateModelDeployment: what the operator would create with its own rights', () => {
  const rule =
    "the operator creates engine Pods with its own rights, so a ModelDeployment may not ask for what Pod Security 'baseline' forbids";
  const ownDeployment =
    'run such an engine as your own Deployment whose Pods carry kvcache.gpustack.ai/inject=true';
  const cache = {
    name: 'cache',
    hostPath: { path: '/var/lib/models', type: 'Directory' },
    mountPath: '/models',
  };

  it('refuses a privileged engine, naming the field, the rule and the way out', () => {
    const errors = errorsOf(md({ privileged: true }));
    assert.equal(errors.length, 1, errors.join('\n'));
    assert.ok(errors[0]!.startsWith(`spec.roles[0].privileged: ${rule}; `), errors[0]);
    assert.ok(errors[0]!.includes(ownDeployment), errors[0]);
  });

  it('refuses a hostPath volume, naming the volume by its position and a PersistentVolumeClaim instead', () => {
    const scratch = { name: 'scratch', emptyDir: {}, mountPath: '/scratch' };
    const errors = errorsOf(md({ additionalVolumes: [scratch, cache] }));
    assert.equal(errors.length, 1, errors.join('\n'));
    assert.ok(errors[0]!.startsWith(`spec.roles[0].additionalVolumes[1].hostPath: ${rule}; `), errors[0]);
    assert.match(errors[0]!, /persistentVolumeClaim/);
    assert.ok(errors[0]!.includes(ownDeployment), errors[0]);
  });

  it('refuses them on a take-over role as well: command changes the argv, not whose rights run it', () => {
    const errors = errorsOf(md({ privileged: true, command: ['vllm', 'serve', 'm'] }));
    assert.match(errors.join('\n'), /^spec\.roles\[0\]\.privileged: /);
  });

  it('admits privileged: false and the volumes baseline allows', () => {
    const volumes = [
      { name: 'scratch', emptyDir: { medium: 'Memory' }, mountPath: '/scratch' },
      {
        name: 'weights',
        persistentVolumeClaim: { claimName: 'weights' },
        mountPath: '/models',
        readOnly: true,
      },
      { name: 'conf', configMap: { name: 'engine-conf' }, mountPath: '/etc/engine' },
    ];
    assert.deepEqual(errorsOf(md({ privileged: false, additionalVolumes: volumes })), []);
  });

  it('never refuses removing the finalizer of one stored before the rule, and refuses its next spec edit', () => {
    const stored = md(
      { privileged: true, additionalVolumes: [cache] },
      { finalizers: ['worker.gpustack.ai/lock'] },
    );
    const released = { ...stored, metadata: { ...stored.metadata, finalizers: [] } };
    assert.deepEqual(validateModelDeployment(released, stored, modelDeploymentContext()), {
      errors: [],
      warnings: [],
    });
    const scaled = md({ privileged: true, additionalVolumes: [cache], replicas: 2 });
    assert.equal(errorsOf(scaled, stored).length, 2);
  });
});
