// ModelDeployment admission of the store tenant a role names: only the Binding's domain.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { md, modelDeploymentContext } from '../builders/index.ts';
import { errorsOf } from '../support/admission-verdicts.ts';

describe('validateModelDeployment: the store tenant a role names', () => {
  const own = modelDeploymentContext({ tenant: { binding: 'team-a', domain: 'chat' } });
  const sglangTakeOver = (command: string[], env: { name: string; value: string }[] = []) =>
    md({ command, env }, { engine: 'SGLang' });
  const launch = ['python3', '-m', 'sglang.launch_server', '--hicache-storage-backend', 'mooncake'];

  it('refuses MOONCAKE_TENANT_ID on a take-over role unless it is the Binding’s domain, naming the field, the rule and the fix', () => {
    const errors = errorsOf(
      sglangTakeOver(launch, [{ name: 'MOONCAKE_TENANT_ID', value: 'team-b' }]),
      undefined,
      own,
    );
    assert.deepEqual(errors, [
      `spec.roles[0].env[0]: MOONCAKE_TENANT_ID names store tenant "team-b", but a role may use only its own Binding's domain, "chat" (KVCachePoolBinding team-a's spec.domain.name): another tenant is another team's cache; set chat, or remove it and drop roles[].command (keep your arguments in extraArgs) so that the operator writes the tenant from the Binding`,
    ]);
    assert.deepEqual(
      errorsOf(sglangTakeOver(launch, [{ name: 'MOONCAKE_TENANT_ID', value: 'chat' }]), undefined, own),
      [],
    );
  });

  it('refuses a tenant_id in a config the take-over passes inline, and one set in its shell', () => {
    const inline = [
      ...launch,
      '--hicache-storage-backend-extra-config',
      '{"master_server_address": "mooncake-dram-leader.gpustack-system.svc:50051", "tenant_id": "team-b"}',
    ];
    assert.match(
      errorsOf(sglangTakeOver(inline), undefined, own).join('\n'),
      /^spec\.roles\[0\]\.command\[6\]: tenant_id names store tenant "team-b", but a role may use only/,
    );
    const shell = ['bash', '-c', 'MOONCAKE_TENANT_ID=team-b exec python3 -m sglang.launch_server'];
    assert.match(
      errorsOf(sglangTakeOver(shell), undefined, own).join('\n'),
      /^spec\.roles\[0\]\.command\[2\]: MOONCAKE_TENANT_ID names store tenant "team-b"/,
    );
    const escaped = [
      'bash',
      '-c',
      `exec vllm serve m --kv-transfer-config "{\\"tenant_id\\": \\"team-b\\"}"`,
    ];
    assert.equal(errorsOf(md({ command: escaped }), undefined, own).length, 1);
  });

  it('refuses a tenant on a take-over role without spec.kvCache, or whose Binding does not exist', () => {
    const env = [{ name: 'MOONCAKE_TENANT_ID', value: 'chat' }];
    const [none] = errorsOf(
      md({ command: launch, env }, { engine: 'SGLang', kvCache: false }),
      undefined,
      own,
    );
    assert.match(none!, /^spec\.roles\[0\]\.env\[0\]: .* no spec\.kvCache/);
    const [missing] = errorsOf(sglangTakeOver(launch, env));
    assert.match(missing!, /KVCachePoolBinding team-a does not exist, so it cannot be checked/);
  });

  it('refuses MOONCAKE_TENANT_ID on a managed vLLM role too: the tenant is written from the Binding', () => {
    const errors = errorsOf(md({ env: [{ name: 'MOONCAKE_TENANT_ID', value: 'chat' }] }), undefined, own);
    assert.equal(errors.length, 1);
    assert.match(
      errors[0]!,
      /^spec\.roles\[0\]\.env\[0\]: env MOONCAKE_TENANT_ID is owned by the operator on vLLM/,
    );
    assert.match(errors[0]!, /could read another team's cache/);
  });
});
