// Owned keys in a role's extraArgs/env are refused in every spelling the engine parses, and each
// refusal names the key, the engine, the field and the way out (KV-cache spec §3.4).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { findOwnedKeyRefusals, type OwnedKeyOptions } from '../../src/inject/owned-keys.ts';
import type { EngineFamily } from '../../src/inject/types.ts';

const withCache: OwnedKeyOptions = { kvCache: true, dtypeOwned: true, field: 'spec.roles[0]' };

function refused(engine: EngineFamily, args: string[], opts: Partial<OwnedKeyOptions> = {}): string[] {
  return findOwnedKeyRefusals(engine, args, [], { ...withCache, ...opts });
}

describe('owned flags on vLLM', () => {
  const spellings = [
    ['--kv-transfer-config', '{}'],
    ['--kv-transfer-config={}'],
    ['--kv_transfer_config', '{}'],
    ['--kv_transfer_config={}'],
    ['--kv-transfer-config.kv_role=kv_both'],
    ['--kv_transfer_config.kv_connector', 'X'],
    ['--kv-trans', '{}'],
    ['--kv-transfer={}'],
    ['--kv-events-config', '{}'],
    ['--kv_events_config.enable_kv_cache_events=true'],
  ];
  for (const args of spellings) {
    it(`refuses ${args[0]}`, () => {
      const [message, ...rest] = refused('vllm', ['--max-model-len', '4096', ...args]);
      assert.equal(rest.length, 0);
      assert.match(message!, /^spec\.roles\[0\]\.extraArgs\[2\]: /);
      assert.match(message!, /--kv-(transfer|events)-config/);
      assert.match(message!, /on vLLM/);
      assert.match(message!, /roles\[\]\.command/);
    });
  }

  it('admits unrelated flags and ambiguous abbreviations', () => {
    assert.deepEqual(
      refused('vllm', ['--max-model-len', '4096', '--enable-prefix-caching', '--kv-cache-memory-bytes=1G']),
      [],
    );
    assert.deepEqual(
      refused('vllm', ['--kv', '1', '--kv-c', '1']),
      [],
      'argparse cannot expand these to one flag',
    );
  });

  it('refuses the dtype and block size while a cache is set, naming the Binding', () => {
    const [dtype, block] = refused('vllm', ['--kv_cache_dtype=fp8', '--block-size', '32']);
    assert.match(dtype!, /--kv_cache_dtype \(read by the engine as --kv-cache-dtype\)/);
    assert.match(dtype!, /spec\.domain\.dtype/);
    assert.match(block!, /spec\.roles\[0\]\.extraArgs\[1\]: --block-size .*spec\.domain\.blockSize/);
  });

  it('admits --kv-cache-dtype and --block-size without a cache, and the dtype when the Setting is off', () => {
    assert.deepEqual(
      refused('vllm', ['--kv-cache-dtype', 'fp8', '--block-size', '32'], { kvCache: false }),
      [],
    );
    assert.equal(
      refused('vllm', ['--kv-cache-dtype', 'fp8', '--block-size', '32'], { dtypeOwned: false }).length,
      1,
    );
  });

  it('refuses the owned env names with the field path', () => {
    const env = [
      { name: 'HF_TOKEN' },
      { name: 'MOONCAKE_CONFIG_PATH' },
      { name: 'VLLM_MOONCAKE_BOOTSTRAP_PORT' },
    ];
    const messages = findOwnedKeyRefusals('vllm-ascend', [], env, withCache);
    assert.equal(messages.length, 2);
    assert.match(messages[0]!, /^spec\.roles\[0\]\.env\[1\]: env MOONCAKE_CONFIG_PATH .*vLLM-Ascend/);
  });
});

describe('owned flags on SGLang', () => {
  it('refuses each owned flag, =value and unique prefixes', () => {
    for (const arg of [
      '--hicache-storage-backend',
      '--hicache-storage-backend=mooncake',
      '--hicache-storage-backend-extra',
      '--disaggregation-mode=prefill',
      '--disaggregation-transfer',
      '--disaggregation-bootstrap-port',
      '--page-size',
      '--pag',
    ]) {
      assert.equal(refused('sglang', [arg, 'x']).length, 1, arg);
    }
  });

  it('admits other hicache flags, ambiguous prefixes and vLLM-only keys', () => {
    assert.deepEqual(
      refused('sglang', ['--hicache-ratio', '2', '--hicache-storage', 'x', '--kv-transfer-config', '{}']),
      [],
    );
  });

  it('reads no underscore or dotted spelling, which SGLang does not parse', () => {
    assert.deepEqual(refused('sglang', ['--hicache_storage_backend', 'mooncake']), []);
  });

  it('refuses every MOONCAKE_ variable it renders, the tenant with its reason', () => {
    const env = [{ name: 'MOONCAKE_TENANT_ID' }, { name: 'MOONCAKE_MASTER' }, { name: 'MC_TE_METRIC' }];
    const messages = findOwnedKeyRefusals('sglang', [], env, withCache);
    assert.equal(messages.length, 2);
    assert.match(messages[0]!, /MOONCAKE_TENANT_ID .*on SGLang .*another team's cache/);
  });
});

describe('argument files', () => {
  it('refuses --config on both engines, with or without a cache, in a role and on a Pod', () => {
    for (const engine of ['vllm', 'vllm-ascend', 'sglang'] as const) {
      for (const args of [['--config', '/etc/engine.yaml'], ['--config=/etc/engine.yaml']]) {
        const [message, ...rest] = refused(engine, ['--max-model-len', '4096', ...args], { kvCache: false });
        assert.equal(rest.length, 0, engine);
        assert.match(
          message!,
          /^spec\.roles\[0\]\.extraArgs\[2\]: --config is owned by the operator on .*: --config reads further arguments from a file, where a flag the operator owns could hide; pass those arguments in extraArgs instead$/,
        );
      }
    }
    const [pod] = findOwnedKeyRefusals('vllm', ['--config', 'x.yaml'], [], {
      ...withCache,
      field: 'spec.containers[0]',
      argsField: 'args',
      scope: 'pod',
    });
    assert.match(pod!, /pass those arguments in the container's args instead$/);
  });

  it('refuses a unique abbreviation of --config, and admits --config-format', () => {
    assert.equal(refused('sglang', ['--conf', 'x.yaml']).length, 1);
    assert.deepEqual(refused('vllm', ['--config-format', 'hf']), []);
    assert.deepEqual(refused('vllm', ['--conf', 'x']), [], 'argparse cannot expand it to one flag');
  });
});

describe('refusal paths', () => {
  it('names the args field the caller gives', () => {
    const [message] = findOwnedKeyRefusals('vllm', ['--kv-transfer-config', '{}'], [], {
      ...withCache,
      field: 'spec.containers[1]',
      argsField: 'args',
    });
    assert.match(message!, /^spec\.containers\[1\]\.args\[0\]: /);
  });
});
