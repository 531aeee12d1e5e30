// ModelDeployment admission of the engine's cache settings (KV-cache spec §3.4, §8): owned cache keys
// refused in every spelling with the way out, kv_load_failure_policy, a float32 domain, transports the
// engine cannot choose between, and a finalizer-only update that is never refused.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { validateModelDeployment } from '../../src/webhooks/modeldeployment-rules.ts';
import { md, modelDeploymentContext } from '../builders/index.ts';
import { errorsOf } from '../support/admission-verdicts.ts';

describe('validateModelDeployment: owned cache keys', () => {
  it('admits a deployment that leaves the cache keys to the operator', () => {
    assert.deepEqual(
      validateModelDeployment(
        md({ extraArgs: ['--max-model-len', '4096'] }),
        undefined,
        modelDeploymentContext(),
      ),
      {
        errors: [],
        warnings: [],
      },
    );
  });

  it('refuses --kv-transfer-config in extraArgs, naming the key, engine and roles[].command', () => {
    const errors = errorsOf(md({ extraArgs: ['--kv-transfer-config', '{}'] }));
    assert.equal(errors.length, 1);
    assert.match(
      errors[0]!,
      /^spec\.roles\[0\]\.extraArgs\[0\]: --kv-transfer-config is owned by the operator on vLLM: .*roles\[\]\.command/,
    );
  });

  it('refuses the vLLM spellings of an owned flag: underscore, dotted field and unique prefix', () => {
    for (const arg of ['--kv_transfer_config={}', '--kv-transfer-config.kv_role=kv_both', '--kv-transfer']) {
      const errors = errorsOf(md({ extraArgs: [arg] }));
      assert.equal(errors.length, 1, arg);
      assert.match(errors[0]!, /read by the engine as --kv-transfer-config/, arg);
    }
  });

  it('refuses owned SGLang env, saying why the tenant id matters', () => {
    const errors = errorsOf(
      md({ env: [{ name: 'MOONCAKE_TENANT_ID', value: 'other-team' }] }, { engine: 'SGLang' }),
    );
    assert.equal(errors.length, 1);
    assert.match(
      errors[0]!,
      /^spec\.roles\[0\]\.env\[0\]: env MOONCAKE_TENANT_ID is owned by the operator on SGLang/,
    );
    assert.match(errors[0]!, /could read another team's cache/);
  });

  it('refuses --kv-cache-dtype while spec.kvCache is set, pointing at the Binding’s domain.dtype', () => {
    const errors = errorsOf(md({ extraArgs: ['--kv-cache-dtype=fp8'] }));
    assert.equal(errors.length, 1);
    assert.match(errors[0]!, /--kv-cache-dtype is owned .*spec\.domain\.dtype/);
  });

  it('admits --kv-cache-dtype without spec.kvCache, with the Setting off, or on a take-over role', () => {
    const dtype = { extraArgs: ['--kv-cache-dtype', 'fp8'] };
    assert.deepEqual(errorsOf(md(dtype, { kvCache: false })), []);
    assert.deepEqual(errorsOf(md(dtype), undefined, modelDeploymentContext({ dtypeOwned: false })), []);
    assert.deepEqual(errorsOf(md({ ...dtype, command: ['vllm', 'serve', 'Qwen/Qwen2.5-7B-Instruct'] })), []);
  });
});

describe('validateModelDeployment: a stored deployment with an owned flag', () => {
  const stored = md({ extraArgs: ['--kv-cache-dtype', 'fp8'] }, { finalizers: ['worker.gpustack.ai/lock'] });

  it('never refuses the metadata-only update that removes the finalizer', () => {
    const released = { ...stored, metadata: { ...stored.metadata, finalizers: [] } };
    assert.deepEqual(validateModelDeployment(released, stored, modelDeploymentContext()), {
      errors: [],
      warnings: [],
    });
  });

  it('refuses its next spec update, naming the flag', () => {
    const scaled = md({ extraArgs: ['--kv-cache-dtype', 'fp8'], replicas: 3 });
    assert.match(errorsOf(scaled, stored)[0]!, /extraArgs\[0\]: --kv-cache-dtype is owned/);
  });
});

describe('validateModelDeployment: kv_load_failure_policy', () => {
  const policy = 'kvcache.gpustack.ai/kv-load-failure-policy';
  const onPurpose = { annotations: { [policy]: 'fail' } };
  const failing =
    '{"kv_connector":"MooncakeStoreConnector","kv_role":"kv_both","kv_load_failure_policy":"fail"}';
  const takeOver = (...flags: string[]) => ({ command: ['vllm', 'serve', 'm', ...flags] });

  it('refuses it in extraArgs with the rule, and names the annotation that asks for fail on purpose', () => {
    for (const args of [
      ['--kv-transfer-config.kv_load_failure_policy=fail'],
      ['--kv_transfer_config.kv_load_failure_policy', 'fail'],
      ['--kv-transfer-config', failing],
    ]) {
      const errors = errorsOf(md({ extraArgs: args }));
      assert.equal(errors.length, 1, args.join(' '));
      assert.match(
        errors[0]!,
        /^spec\.roles\[0\]\.extraArgs\[0\]: \S+ sets kv_load_failure_policy to fail, which the operator writes on vLLM: recompute, so a load from the store that fails or stalls is computed again instead of failing the request with HTTP 500; remove it \(a second --kv-transfer-config would replace the connector's\), and to fail such requests on purpose annotate the ModelDeployment kvcache\.gpustack\.ai\/kv-load-failure-policy: "fail"$/,
        args.join(' '),
      );
    }
    assert.match(
      errorsOf(md({ extraArgs: ['--kv-transfer-config.kv_load_failure_policy=recompute'] }))[0]!,
      /sets kv_load_failure_policy to recompute, which the operator writes on vLLM: recompute/,
    );
    assert.equal(
      errorsOf(md({ extraArgs: ['--kv-transfer-config.kv_load_failure_policy=fail'] }, onPurpose)).length,
      1,
    );
  });

  it('refuses fail in a take-over role’s own --kv-transfer-config unless the deployment says it is on purpose', () => {
    assert.deepEqual(errorsOf(md(takeOver('--kv-transfer-config', failing))), [
      `spec.roles[0].command[4]: kv_load_failure_policy fail makes vLLM answer the request with HTTP 500 when its load from the store fails or stalls (a busy member, an object whose lease ran out); set it to recompute, or annotate the ModelDeployment ${policy}: "fail" if failing is intended`,
    ]);
    assert.match(
      errorsOf(
        md(
          takeOver(
            '--kv-transfer-config.kv_connector=MooncakeStoreConnector',
            '--kv_transfer_config.kv_role',
            'kv_both',
            '--kv-transfer-config.kv_load_failure_policy',
            'fail',
          ),
        ),
      )[0]!,
      /^spec\.roles\[0\]\.command\[6\]: kv_load_failure_policy fail makes vLLM/,
    );
    const fieldsWin = takeOver('--kv-transfer-config', failing, '--kv-transfer-config.kv_role=kv_both');
    assert.deepEqual(errorsOf(md(fieldsWin)), [], 'vLLM passes the fields after, replacing the whole object');
    assert.deepEqual(errorsOf(md(takeOver('--kv-transfer-config', failing), onPurpose)), []);
    const recompute = failing.replace('"fail"', '"recompute"');
    assert.deepEqual(
      validateModelDeployment(
        md(takeOver('--kv-transfer-config', recompute)),
        undefined,
        modelDeploymentContext(),
      ),
      {
        errors: [],
        warnings: [],
      },
    );
  });

  it('warns a take-over role whose connector leaves the policy to vLLM’s default, fail', () => {
    const { warnings } = validateModelDeployment(
      md(takeOver('--kv-transfer-config={"kv_connector":"MooncakeStoreConnector","kv_role":"kv_both"}')),
      undefined,
      modelDeploymentContext(),
    );
    assert.deepEqual(warnings, [
      'spec.roles[0].command[3]: --kv-transfer-config names a connector but no kv_load_failure_policy, so vLLM fails the request when a load from the store fails or stalls (its default is fail); add "kv_load_failure_policy":"recompute"',
    ]);
  });

  it('refuses an annotation that names no policy, and the annotation on SGLang', () => {
    assert.deepEqual(errorsOf(md({}, { annotations: { [policy]: 'Fail' } })), [
      `metadata.annotations[${policy}]: "Fail" is not a policy; set "fail" to fail a request whose load from the store fails or stalls, or remove it (the operator writes recompute)`,
    ]);
    assert.deepEqual(errorsOf(md({}, { engine: 'SGLang', ...onPurpose })), [
      `metadata.annotations[${policy}] applies to vLLM only (SGLang computes what a slow or failed prefetch from the store does not bring, and has no failing policy); remove it`,
    ]);
    assert.deepEqual(errorsOf(md({}, { annotations: { [policy]: 'recompute' } })), []);
  });

  it('judges an annotation-only edit, and still never a finalizer-only one', () => {
    const stored = md({}, { finalizers: ['worker.gpustack.ai/lock'] });
    const annotated = md(
      {},
      { finalizers: ['worker.gpustack.ai/lock'], annotations: { [policy]: 'always' } },
    );
    assert.match(errorsOf(annotated, stored)[0]!, /"always" is not a policy/);
    const takenOver = md(takeOver('--kv-transfer-config', failing), { ...onPurpose, finalizers: ['x'] });
    const withdrawn = md(takeOver('--kv-transfer-config', failing), { finalizers: ['x'] });
    assert.match(errorsOf(withdrawn, takenOver)[0]!, /command\[4\]: kv_load_failure_policy fail/);
    const released = { ...takenOver, metadata: { ...takenOver.metadata, finalizers: [] } };
    assert.deepEqual(errorsOf(released, takenOver), []);
  });
});

describe('validateModelDeployment: transports of the pool', () => {
  it('refuses a new Binding on a pool with several transports, naming each', () => {
    const errors = errorsOf(md(), undefined, modelDeploymentContext({ poolProtocols: ['rdma', 'tcp'] }));
    assert.deepEqual(errors, [
      'spec.kvCache.poolRef: KVCachePoolBinding team-a is served by member groups on several transports (rdma, tcp), and vLLM cannot pick one; use a Binding on a pool whose backend uses one transport',
    ]);
  });

  it('keeps an existing deployment editable when its pool later mixes transports', () => {
    const old = md();
    const edited = md({ replicas: 2 });
    assert.deepEqual(errorsOf(edited, old, modelDeploymentContext({ poolProtocols: ['rdma', 'tcp'] })), []);
    assert.deepEqual(errorsOf(md(), undefined, modelDeploymentContext({ poolProtocols: ['tcp'] })), []);
  });
});

describe('validateModelDeployment: a float32 domain', () => {
  it('refuses a model dtype other than float32, since the engine keeps its KV in the model’s dtype', () => {
    const f32 = modelDeploymentContext({ domainDtype: 'float32' });
    assert.deepEqual(errorsOf(md({ extraArgs: ['--dtype', 'bfloat16'] }), undefined, f32), [
      "spec.roles[0].extraArgs: --dtype bfloat16 would make the engine's KV cache bfloat16, but KVCachePoolBinding team-a's domain is float32, which the operator renders as --dtype float32 --kv-cache-dtype auto; remove --dtype, or reference a Binding whose spec.domain.dtype is the one you want",
    ]);
    assert.deepEqual(errorsOf(md({ extraArgs: ['--dtype=float32'] }), undefined, f32), []);
    assert.deepEqual(errorsOf(md(), undefined, f32), []);
    assert.deepEqual(errorsOf(md({ extraArgs: ['--dtype', 'bfloat16'] })), []);
  });
});
