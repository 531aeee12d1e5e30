// Which launch programs the Pod webhook accepts, so the flags it appends reach the engine's parser
// (KV-cache spec §6.4).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type LaunchVerdict, recogniseLaunch } from '../../src/inject/launch.ts';
import type { EngineFamily } from '../../src/inject/types.ts';

const field = 'spec.containers[0]';

function launch(
  engine: EngineFamily,
  command: string[] | undefined,
  args?: string[],
  argsForwarded = false,
): LaunchVerdict {
  return recogniseLaunch(
    engine,
    { ...(command ? { command } : {}), ...(args ? { args } : {}) },
    { argsForwarded, field },
  );
}

function program(verdict: LaunchVerdict): string {
  assert.ok(verdict.ok, verdict.ok ? '' : verdict.message);
  return verdict.program;
}

function refusal(verdict: LaunchVerdict): string {
  assert.ok(!verdict.ok, 'expected a refusal');
  assert.match(verdict.message, /^spec\.containers\[0\]: /);
  return verdict.message;
}

describe('accepted launches', () => {
  it('recognises the engines’ entry points', () => {
    assert.equal(program(launch('vllm', ['vllm', 'serve', 'm'])), 'vllm');
    assert.equal(program(launch('vllm-ascend', ['/usr/local/bin/vllm'], ['serve', 'm'])), 'vllm');
    assert.equal(
      program(launch('sglang', ['python3', '-m', 'sglang.launch_server'], ['--model-path', 'm'])),
      'python3 -m sglang.launch_server',
    );
  });

  it('sees through transparent launchers', () => {
    assert.equal(program(launch('vllm', ['tini', '--', 'vllm', 'serve', 'm'])), 'vllm');
    assert.equal(program(launch('vllm', ['/usr/bin/dumb-init', '--', 'vllm', 'serve'])), 'vllm');
    assert.equal(
      program(launch('vllm', ['env', '-u', 'HOME', 'VLLM_LOGGING_LEVEL=DEBUG', 'vllm', 'serve'])),
      'vllm',
    );
    assert.equal(
      program(launch('sglang', ['tini', '--', 'exec', 'python3', '-m', 'sglang.launch_server'])),
      'python3 -m sglang.launch_server',
    );
  });

  it('trusts a declared forwarding launcher, script or image entrypoint', () => {
    assert.equal(program(launch('vllm', ['/entrypoint.sh'], ['serve'], true)), '/entrypoint.sh');
    assert.equal(program(launch('vllm', ['my-launcher'], [], true)), 'my-launcher');
    assert.equal(program(launch('vllm', undefined, ['serve', 'm'], true)), '<image entrypoint>');
  });
});

describe('refused launches', () => {
  it('refuses sh -c even when forwarding is declared', () => {
    assert.match(refusal(launch('vllm', ['sh', '-c', 'vllm serve m'], [], true)), /sh -c/);
    assert.match(refusal(launch('vllm', ['/bin/bash', '-lc', 'vllm serve m'])), /sh -c/);
    assert.match(
      refusal(launch('vllm', ['bash', '-o', 'pipefail', '-c', 'vllm serve m'], [], true)),
      /sh -c/,
    );
    assert.match(refusal(launch('vllm', ['tini', '--', 'sh', '-c', 'vllm serve m'])), /sh -c/);
  });

  it('refuses env -S in every spelling', () => {
    for (const flag of ['-S', '--split-string=vllm serve', '-iS'])
      assert.match(refusal(launch('vllm', ['env', flag, 'vllm serve'])), /env -S/);
  });

  it('refuses a launcher with nothing after it', () => {
    assert.match(refusal(launch('vllm', ['tini', '--'])), /runs tini with nothing after it/);
    assert.match(refusal(launch('vllm', ['dumb-init'])), /nothing after it/);
  });

  it('refuses wrapper scripts unless forwarding is declared, naming the annotation', () => {
    for (const command of [
      ['/entrypoint.sh'],
      ['bash', '/start.sh'],
      ['/usr/local/bin/entrypoint'],
      ['run'],
    ]) {
      const message = refusal(launch('vllm', command, ['serve']));
      assert.match(message, /wrapper script/);
      assert.match(message, /kvcache\.gpustack\.ai\/launch-args-forwarded: "true"/);
    }
  });

  it('refuses args without command, and a container with neither', () => {
    assert.match(refusal(launch('vllm', undefined, ['serve', 'm'])), /args without command/);
    assert.match(refusal(launch('vllm', undefined)), /neither command nor args/);
  });

  it('refuses another engine’s program, forwarding or not', () => {
    assert.match(
      refusal(launch('vllm', ['python3', '-m', 'sglang.launch_server'], [], true)),
      /launches SGLang .* names vLLM/,
    );
    assert.match(refusal(launch('sglang', ['vllm', 'serve', 'm'])), /launches vLLM .* names SGLang/);
  });

  it('refuses an unrecognised program', () => {
    assert.match(
      refusal(launch('vllm', ['python3', '-m', 'vllm.entrypoints.openai.api_server'])),
      /not an entry point/,
    );
  });
});
