// Pods as tests build them: store Pods in the states the kubelet reports, and engine Pods opted in to
// cache injection as admission sees them.
import type { Container, ContainerStatus, Pod } from 'kubernetes-types/core/v1.js';
import type { KubeObject } from '../../src/kube/object.ts';
import type { AdmittedPod } from '../../src/webhooks/pod-injection-rules.ts';

/** An engine Pod as the apiserver returns it, with the container fields injection writes. */
export type EnginePod = KubeObject & {
  spec: {
    containers: {
      name: string;
      image?: string;
      command?: string[];
      args?: string[];
      env?: { name: string; value?: string }[];
    }[];
    volumes?: { name: string }[];
  };
};

/** A container's status as the kubelet reports it, with what these tests leave out filled in. */
export function containerStatus(s: Partial<ContainerStatus> & { name: string }): ContainerStatus {
  return { image: 'kvpool-store', imageID: '', ready: false, restartCount: 0, ...s };
}

/** A store Pod on n1 in the operator's namespace, with `status` over its Pod IP. */
export function storePod(
  name: string,
  status: Pod['status'],
  over: Partial<KubeObject<Pod>['metadata']> = {},
): KubeObject<Pod> {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: 'gpustack-system', ...over },
    spec: { nodeName: 'n1', containers: [] },
    status: { podIP: '10.0.0.20', ...status },
  };
}

const notReady = [{ type: 'Ready', status: 'False', reason: 'ContainersNotReady' }];

export function waitingPod(name: string, reason: string, message?: string): KubeObject<Pod> {
  return storePod(name, {
    phase: 'Pending',
    conditions: notReady,
    containerStatuses: [containerStatus({ name: 'store', state: { waiting: { reason, message } } })],
  });
}

export function crashLoopingPod(name: string): KubeObject<Pod> {
  return storePod(name, {
    phase: 'Running',
    conditions: notReady,
    containerStatuses: [
      containerStatus({
        name: 'store',
        restartCount: 6,
        state: {
          waiting: { reason: 'CrashLoopBackOff', message: 'back-off 5m0s restarting failed container' },
        },
        lastState: { terminated: { exitCode: 1, reason: 'Error' } },
      }),
    ],
  });
}

export const vllm: Container = {
  name: 'vllm',
  command: ['vllm', 'serve', 'Qwen/Qwen2.5-7B-Instruct'],
  args: ['--max-model-len', '4096'],
};
export const sglang: Container = {
  name: 'sglang',
  command: ['python3', '-m', 'sglang.launch_server', '--model-path', 'Qwen/Qwen2.5-7B-Instruct'],
};

/** A Pod in team-a opted in to injection from Binding team-a as a vLLM engine, `annotations` over that. */
export function optedInPod(
  containers: Container[] = [vllm],
  annotations: Record<string, string> = {},
): AdmittedPod {
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
