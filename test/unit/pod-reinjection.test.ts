// A Pod the injection webhook already injected, judged again: the apiserver calls the webhook again
// after a later mutating webhook changed the Pod (reinvocationPolicy IfNeeded). The injection is left
// as it is when it is what the Binding gives now, and refused otherwise, so a Pod is injected once.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Container } from 'kubernetes-types/core/v1.js';
import type { JsonPatchOp } from '../../src/kube/webhook-server.ts';
import type { AdmittedPod } from '../../src/webhooks/pod-injection-rules.ts';
import { binding, injectionContext, optedInPod, sglang, vllm } from '../builders/index.ts';
import { accepted, refused } from '../support/admission-verdicts.ts';

/** The Pod as the apiserver stores it after a JSON patch of the kinds the webhook writes. */
function patched(p: AdmittedPod, patch: JsonPatchOp[]): AdmittedPod {
  const out = structuredClone(p) as unknown as Record<string, unknown>;
  for (const o of patch) {
    const keys = o.path
      .slice(1)
      .split('/')
      .map((k) => k.replaceAll('~1', '/').replaceAll('~0', '~'));
    const last = keys.pop()!;
    let at = out as Record<string, unknown>;
    for (const k of keys) at = at[k] as Record<string, unknown>;
    at[last] = structuredClone(o.value);
  }
  return out as unknown as AdmittedPod;
}

describe('planPodInjection: a Pod the webhook already injected (re-invocation)', () => {
  const injectedOnce = (p: AdmittedPod, c = injectionContext()) => patched(p, accepted(p, c));
  const sglangPod = (containers: Container[]) =>
    optedInPod(containers, { 'kvcache.gpustack.ai/engine': 'SGLang' });

  it('leaves an injected vLLM Pod as it is', () => {
    const once = injectedOnce(optedInPod());
    assert.deepEqual(accepted(once), []);
  });

  it('leaves an injected vLLM Pod that fails failed loads on purpose as it is', () => {
    const once = injectedOnce(optedInPod([vllm], { 'kvcache.gpustack.ai/kv-load-failure-policy': 'fail' }));
    assert.match(JSON.stringify(once.spec.containers[0]!.args), /kv_load_failure_policy\\":\\"fail/);
    assert.deepEqual(accepted(once), []);
  });

  it('leaves an injected SGLang Pod as it is, whether or not it asked for the hierarchical cache itself', () => {
    assert.deepEqual(accepted(injectedOnce(sglangPod([sglang]))), []);
    const own = { ...sglang, args: ['--enable-hierarchical-cache', '--mem-fraction-static', '0.8'] };
    assert.deepEqual(accepted(injectedOnce(sglangPod([own]))), []);
  });

  it('stays a no-op after a later webhook added a sidecar, a volume, an env entry and args', () => {
    const once = injectedOnce(
      optedInPod([vllm, { name: 'proxy', image: 'proxy' }], { 'kvcache.gpustack.ai/container': 'vllm' }),
    );
    once.spec.containers.push({ name: 'mesh-proxy', image: 'mesh/proxy', args: ['proxy'] });
    once.spec.volumes!.push({ name: 'mesh-certs', emptyDir: {} });
    const engine = once.spec.containers[0]!;
    engine.env!.push({ name: 'MESH_ENABLED', value: 'true' });
    engine.args = [...engine.args!, '--disable-log-requests'];
    assert.deepEqual(accepted(once), []);
  });

  it('reads the injection as the apiserver stores it: defaults added, empty values dropped', () => {
    const stored = (p: AdmittedPod) => {
      for (const v of p.spec.volumes ?? []) {
        const api = v.downwardAPI as
          | { defaultMode?: number; items: { fieldRef: Record<string, string> }[] }
          | undefined;
        if (!api) continue;
        api.defaultMode = 420;
        for (const item of api.items) item.fieldRef.apiVersion = 'v1';
      }
      for (const e of p.spec.containers[0]!.env ?? []) {
        if (e.value === '') delete e.value;
        const ref = (e.valueFrom as { fieldRef?: Record<string, string> } | undefined)?.fieldRef;
        if (ref) ref.apiVersion = 'v1';
      }
      return p;
    };
    assert.deepEqual(accepted(stored(injectedOnce(optedInPod()))), []);
    assert.deepEqual(accepted(stored(injectedOnce(sglangPod([sglang])))), []);
  });

  it('finds the injected container of a one-container Pod after a sidecar joined it', () => {
    const once = injectedOnce(optedInPod());
    once.spec.containers.push({ name: 'mesh-proxy', image: 'mesh/proxy', args: ['proxy'] });
    assert.deepEqual(accepted(once), []);
  });

  it('refuses an injection that is not what the Binding gives now, naming the record', () => {
    const once = injectedOnce(optedInPod());
    const moved = injectionContext({
      binding: binding('team-a', 'team-a', { domain: 'qwen-fp8-v1', blockSize: 32, dtype: 'fp8_e4m3' }),
    });
    assert.match(refused(once, moved), /injected\]: the injected flags are not in the container’s args/);
    const edited = structuredClone(once);
    edited.metadata.annotations!['kvcache.gpustack.ai/client-config'] = '{"tenant_id":"someone-else"}';
    assert.match(refused(edited), /client-config differs from what the Binding gives/);
    const env = structuredClone(once);
    env.spec.containers[0]!.env = env.spec.containers[0]!.env!.filter(
      (e) => e.name !== 'MOONCAKE_CONFIG_PATH',
    );
    assert.match(refused(env), /env MOONCAKE_CONFIG_PATH is not the injected one/);
  });

  it('still refuses an owned flag another webhook added beside the injection', () => {
    const once = injectedOnce(optedInPod());
    once.spec.containers[0]!.args = [...once.spec.containers[0]!.args!, '--kv-cache-dtype', 'auto'];
    assert.match(refused(once), /args\[\d+\]: --kv-cache-dtype is owned by the operator on vLLM/);
  });
});
