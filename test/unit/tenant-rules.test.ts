// Which store tenant a Pod may name (docs/decisions/0034): in a namespace holding Bindings, only their
// domains, wherever the Pod writes it down; elsewhere the Pod is not judged.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { tenantsNamedIn } from '../../src/inject/tenant-naming.ts';
import { podTenantRefusals } from '../../src/webhooks/tenant-rules.ts';

const teamA = [
  { binding: 'team-a', domain: 'chat' },
  { binding: 'team-a-fp8', domain: 'chat-fp8' },
];

describe('tenantsNamedIn', () => {
  it('reads a tenant from a variable assignment, JSON, escaped JSON and key=value', () => {
    assert.deepEqual(tenantsNamedIn('MOONCAKE_TENANT_ID=team-b exec python3 -m sglang.launch_server'), [
      { key: 'MOONCAKE_TENANT_ID', value: 'team-b' },
    ]);
    assert.deepEqual(tenantsNamedIn('{"master_server_address": "m:50051", "tenant_id": "team-b"}'), [
      { key: 'tenant_id', value: 'team-b' },
    ]);
    assert.deepEqual(tenantsNamedIn('--kv-transfer-config "{\\"tenant_id\\":\\"team-b\\"}"'), [
      { key: 'tenant_id', value: 'team-b' },
    ]);
    assert.deepEqual(tenantsNamedIn("export MOONCAKE_TENANT_ID='$T'; tenant_id=x"), [
      { key: 'MOONCAKE_TENANT_ID', value: '$T' },
      { key: 'tenant_id', value: 'x' },
    ]);
  });

  it('reads nothing where the tenant is only read, not set', () => {
    assert.deepEqual(tenantsNamedIn('echo $MOONCAKE_TENANT_ID; --max-model-len 4096'), []);
  });
});

describe('podTenantRefusals', () => {
  const engine = (env: { name: string; value?: string; valueFrom?: object }[], args: string[] = []) => ({
    containers: [{ name: 'engine', image: 'e', env, args }],
  });

  it('admits the domains of the namespace’s Bindings', () => {
    assert.deepEqual(
      podTenantRefusals(engine([{ name: 'MOONCAKE_TENANT_ID', value: 'chat-fp8' }]), teamA),
      [],
    );
  });

  it('refuses another tenant, naming the field, the tenants this namespace may use and the fix', () => {
    assert.deepEqual(podTenantRefusals(engine([{ name: 'MOONCAKE_TENANT_ID', value: 'team-b' }]), teamA), [
      'spec.containers[0].env[0]: MOONCAKE_TENANT_ID names store tenant "team-b", but a Pod in this namespace may use only the domains of its KVCachePoolBindings: chat (KVCachePoolBinding team-a), chat-fp8 (KVCachePoolBinding team-a-fp8); write one of them, or let the injection write it (label the Pod kvcache.gpustack.ai/inject=true and name the Binding in kvcache.gpustack.ai/binding)',
    ]);
  });

  it('refuses a tenant it cannot read, and one in argv, in an env value or in an init container', () => {
    const fromSecret = { name: 'MOONCAKE_TENANT_ID', valueFrom: { secretKeyRef: { name: 's', key: 'k' } } };
    assert.match(
      podTenantRefusals(engine([fromSecret]), teamA)[0]!,
      /^spec\.containers\[0\]\.env\[0\]: MOONCAKE_TENANT_ID comes from valueFrom, which admission cannot read/,
    );
    const inline = ['--hicache-storage-backend-extra-config', '{"tenant_id": "team-b"}'];
    assert.match(
      podTenantRefusals(engine([], inline), teamA)[0]!,
      /^spec\.containers\[0\]\.args\[1\]: tenant_id /,
    );
    const config = { name: 'STORE_CONFIG', value: '{"tenant_id": "team-b"}' };
    assert.match(
      podTenantRefusals(engine([config]), teamA)[0]!,
      /^spec\.containers\[0\]\.env\[0\]: STORE_CONFIG, which sets tenant_id, names store tenant "team-b"/,
    );
    const init = {
      containers: [{ name: 'engine', image: 'e' }],
      initContainers: [{ name: 'warm', image: 'e', command: ['sh', '-c', 'MOONCAKE_TENANT_ID=team-b warm'] }],
    };
    assert.match(podTenantRefusals(init, teamA)[0]!, /^spec\.initContainers\[0\]\.command\[2\]: /);
  });

  it('judges nothing in a namespace without a Binding', () => {
    assert.deepEqual(podTenantRefusals(engine([{ name: 'MOONCAKE_TENANT_ID', value: 'team-b' }]), []), []);
  });
});
