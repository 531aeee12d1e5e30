// Opted-in Pods and the context the injection webhook judges them in, for the Pod injection tests.
import assert from 'node:assert/strict';
import type { Container } from 'kubernetes-types/core/v1.js';
import type { JsonPatchOp } from '../../src/kube/webhook-server.ts';
import {
  type AdmittedPod,
  type PodInjectionContext,
  planPodInjection,
} from '../../src/webhooks/pod-injection-rules.ts';
import { backend, binding, readyPool } from '../support/kvcache-fixtures.ts';

export const vllm: Container = {
  name: 'vllm',
  command: ['vllm', 'serve', 'Qwen/Qwen2.5-7B-Instruct'],
  args: ['--max-model-len', '4096'],
};
export const sglang: Container = {
  name: 'sglang',
  command: ['python3', '-m', 'sglang.launch_server', '--model-path', 'Qwen/Qwen2.5-7B-Instruct'],
};

export function pod(containers: Container[] = [vllm], annotations: Record<string, string> = {}): AdmittedPod {
  return {
    metadata: {
      generateName: 'chat-',
      namespace: 'team-a',
      labels: { 'kvcache.gpustack.ai/inject': 'true' },
      annotations: {
        'kvcache.gpustack.ai/binding': 'team-a',
        'kvcache.gpustack.ai/engine': 'vLLM',
        ...annotations,
      },
    },
    spec: { containers },
  };
}

export const ctx = (over: Partial<PodInjectionContext> = {}): PodInjectionContext => ({
  binding: binding('team-a', 'team-a', { domain: 'qwen-fp8-v1', blockSize: 16, dtype: 'fp8_e4m3' }),
  pool: readyPool(),
  backend: backend(),
  dtypeOwned: true,
  ...over,
});

export function accepted(p: AdmittedPod, c = ctx()): JsonPatchOp[] {
  const v = planPodInjection(p, c);
  assert.ok(v.ok, v.ok ? '' : v.message);
  return v.patch;
}

export function refused(p: AdmittedPod, c = ctx()): string {
  const v = planPodInjection(p, c);
  assert.ok(!v.ok, 'expected a refusal');
  return v.message;
}

export const op = (patch: JsonPatchOp[], path: string) => patch.find((o) => o.path === path);
