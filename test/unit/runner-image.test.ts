// The engine image a role runs when it names none (ModelDeployment spec §1.4): the runner tag formed
// from the InstanceType's manufacturer and its nodes' runtime version.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ModelDeployment } from '../../src/api/types.ts';
import {
  compareVersions,
  engineImage,
  poolRuntimeVersions,
  runnerImageRefusal,
} from '../../src/vocabulary/runner-image.ts';
import { instanceType, node as labelledNode, modelDeployment } from '../builders/index.ts';

const local = instanceType('local', { acceleratable: false });
const a10g = instanceType('nvidia-a10g', {
  acceleratable: true,
  acceleratorGroup: 'nvidia-a10g',
  manufacturer: 'nvidia',
});

describe('the runner image', () => {
  const node = (labels: Record<string, string>) => labelledNode('n', labels);
  const group = 'acceleratable.feature.gpustack.ai/nvidia-a10g';
  const version = 'acceleratable.feature.gpustack.ai/nvidia.runtime-version';

  it('reads the runtime versions of the InstanceType’s own nodes, lowest first', () => {
    const nodes = [
      node({ [group]: 'true', [version]: '12.10' }),
      node({ [group]: 'true', [version]: '12.9' }),
      node({ [group]: 'true', [version]: '12.9' }),
      node({ 'acceleratable.feature.gpustack.ai/nvidia-h100': 'true', [version]: '12.4' }),
      node({ [group]: 'true' }),
    ];
    assert.deepEqual(poolRuntimeVersions(a10g, nodes), ['12.9', '12.10']);
    assert.deepEqual(poolRuntimeVersions(local, nodes), []);
  });

  it('tags a CPU InstanceType (no accelerator) with the CPU runner form, cpu-<engine><version>', () => {
    const role = { name: 'server', replicas: 1, instanceType: 'local' };
    const md = (engine: 'vLLM' | 'SGLang'): ModelDeployment =>
      modelDeployment('m', {
        spec: { model: { name: 'org/model' }, engine: { name: engine, version: '0.32.0' } },
        roles: [role],
      });
    assert.equal(engineImage(md('vLLM'), role, local, undefined), 'gpustack/runner:cpu-vllm0.32.0');
    assert.equal(engineImage(md('SGLang'), role, local, undefined), 'gpustack/runner:cpu-sglang0.32.0');
    // A node's runtime version is an accelerator's: it plays no part in a CPU tag.
    assert.equal(engineImage(md('vLLM'), role, local, '13.0'), 'gpustack/runner:cpu-vllm0.32.0');
  });

  it('refuses at admission what can never be tagged: a manufacturer with no runner', () => {
    assert.equal(runnerImageRefusal(a10g), undefined);
    assert.equal(runnerImageRefusal(local), undefined);
    const mlu = instanceType('mlu', {
      acceleratable: true,
      acceleratorGroup: 'cambricon-mlu',
      manufacturer: 'cambricon',
    });
    assert.equal(
      runnerImageRefusal(mlu),
      'gpustack/runner publishes no image for manufacturer cambricon (InstanceType mlu)',
    );
  });

  it('compares versions part by part', () => {
    assert.deepEqual(['12.10', '12.9', '11.8', '12.9.1'].sort(compareVersions), [
      '11.8',
      '12.9',
      '12.9.1',
      '12.10',
    ]);
  });
});
