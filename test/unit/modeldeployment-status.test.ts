// How a ModelDeployment reaches its cache (Binding → pool → backend) and how its conditions and phase
// read (KV-cache spec §2.4, §5.2, §6.2): engines get a connection only when the whole chain is Ready.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CacheAttachedReason } from '../../src/api/model-deployment.ts';
import type { KVCachePoolBinding, ModelDeployment } from '../../src/api/types.ts';
import { resolveCache } from '../../src/controllers/modeldeployment/connection.ts';
import {
  type DeploymentView,
  decideDeployment,
  type RoleView,
  roleSummary,
} from '../../src/controllers/modeldeployment/status.ts';
import type { ReplicaReading } from '../../src/store/replica-trend.ts';
import {
  backend,
  binding,
  clientEndpoint,
  cond,
  conditionOf,
  deletedAt,
  externalBackend,
  group,
  messageOf,
  modelDeployment,
  pool,
  readyPool,
} from '../builders/index.ts';

function md(opts: { kvCache?: boolean; deleting?: boolean } = {}): ModelDeployment {
  return modelDeployment('chat', {
    metadata: { generation: 2, ...(opts.deleting ? { deletionTimestamp: deletedAt } : {}) },
    spec: opts.kvCache === false ? {} : { kvCache: { poolRef: { name: 'team-a' } } },
  });
}

const readyBinding = (status: KVCachePoolBinding['status'] = { phase: 'Ready' }) =>
  binding('team-a', 'team-a', { domain: 'qwen-fp8-v1', blockSize: 16, dtype: 'fp8_e4m3', status });

describe('resolveCache', () => {
  it('is NotApplicable without spec.kvCache', () => {
    const r = resolveCache(md({ kvCache: false }), undefined, undefined, undefined);
    assert.deepEqual(conditionOf({ conditions: [r.domainRegistered] }, 'DomainRegistered'), {
      status: 'True',
      reason: 'NotApplicable',
    });
    assert.equal(r.connection, undefined);
    assert.equal(r.echo, undefined);
  });

  it('is BindingNotFound, naming the namespace and Binding, when the Binding is missing', () => {
    const r = resolveCache(md(), undefined, readyPool(), backend());
    assert.equal(r.domainRegistered.status, 'False');
    assert.equal(r.domainRegistered.reason, 'BindingNotFound');
    assert.match(r.domainRegistered.message, /KVCachePoolBinding team-a\/team-a does not exist/);
    assert.equal(r.connection, undefined);
  });

  it('is BindingDeleting while the Binding is being deleted, still echoing its domain', () => {
    const b = binding('team-a', 'team-a', {
      domain: 'qwen-fp8-v1',
      deleting: true,
      status: { phase: 'Ready' },
    });
    const r = resolveCache(md(), b, readyPool(), backend());
    assert.equal(r.domainRegistered.reason, 'BindingDeleting');
    assert.equal(r.connection, undefined);
    assert.equal(r.echo?.domain?.name, 'qwen-fp8-v1');
  });

  it('is BindingNotReady with the Binding’s own phase message', () => {
    const b = readyBinding({ phase: 'Error', phaseMessage: 'domain qwen-fp8-v1 is not in the ledger' });
    const r = resolveCache(md(), b, readyPool(), backend());
    assert.equal(r.domainRegistered.status, 'False');
    assert.equal(r.domainRegistered.reason, 'BindingNotReady');
    assert.match(r.domainRegistered.message, /is Error: domain qwen-fp8-v1 is not in the ledger/);
  });

  it('is Registered without a connection while the pool is not Ready or publishes no endpoint', () => {
    const notReady = pool('shared-dram', { status: { phase: 'Error', clientEndpoint } });
    const noEndpoint = pool('shared-dram', { status: { phase: 'Ready' } });
    for (const p of [notReady, noEndpoint, undefined]) {
      const r = resolveCache(md(), readyBinding(), p, backend());
      assert.equal(r.domainRegistered.reason, 'Registered');
      assert.equal(r.domainRegistered.status, 'True');
      assert.equal(r.connection, undefined);
      assert.deepEqual(r.echo, {
        binding: 'team-a',
        pool: 'shared-dram',
        domain: { name: 'qwen-fp8-v1', blockSize: 16, dtype: 'fp8_e4m3' },
      });
    }
  });

  it('connects to the pool’s endpoint with the tenant, over the first member group’s transport', () => {
    const rdma = backend('mooncake-dram', {
      groups: [group({ transport: { protocol: 'RDMA' } }), group({ transport: { protocol: 'TCP' } })],
    });
    const r = resolveCache(md(), readyBinding(), readyPool(), rdma);
    assert.deepEqual(r.connection, {
      binding: 'team-a',
      pool: 'shared-dram',
      domain: { name: 'qwen-fp8-v1', blockSize: 16, dtype: 'fp8_e4m3' },
      masterAddress: clientEndpoint,
      protocol: 'rdma',
      tenantInjected: true,
    });
  });

  it('spells the backend-wide transport the store’s way, tcp for Auto', () => {
    assert.equal(resolveCache(md(), readyBinding(), readyPool(), backend()).connection?.protocol, 'tcp');
    const rdma = backend('mooncake-dram', { protocol: 'RDMA' });
    assert.equal(resolveCache(md(), readyBinding(), readyPool(), rdma).connection?.protocol, 'rdma');
    assert.equal(
      resolveCache(md(), readyBinding(), readyPool(), externalBackend()).connection?.protocol,
      'tcp',
    );
  });

  it('injects no tenant only when the pool reports MultiTenancyDisabled', () => {
    const off = readyPool(cond('QuotaLedgerAvailable', 'False', 'MultiTenancyDisabled'));
    assert.equal(resolveCache(md(), readyBinding(), off, backend()).connection?.tenantInjected, false);
    const other = readyPool(cond('QuotaLedgerAvailable', 'False', 'LedgerUnreachable'));
    assert.equal(resolveCache(md(), readyBinding(), other, backend()).connection?.tenantInjected, true);
  });
});

const role = (over: Partial<RoleView> = {}): RoleView => ({
  name: 'server',
  kind: 'Server',
  desired: 2,
  ready: 2,
  updated: 2,
  unmanaged: false,
  ...over,
});

function view(over: Partial<DeploymentView> = {}): DeploymentView {
  const m = over.md ?? md();
  return {
    md: m,
    roles: [role()],
    cache: resolveCache(m, readyBinding(), readyPool(), backend()),
    heldByCache: false,
    ...over,
  };
}

const attached = (v: DeploymentView) => conditionOf(decideDeployment(v), 'CacheAttached');

const active: ReplicaReading = {
  totals: { storedKeys: 40, loadedKeys: 12, failedKeys: 1, prefixQueriedTokens: 1536, prefixHitTokens: 768 },
  recent: 'active',
  lastSuccessAt: '2026-01-01T10:00:00Z',
};

describe('decideDeployment: CacheAttached', () => {
  it('is NotApplicable without spec.kvCache', () => {
    const m = md({ kvCache: false });
    const v = view({ md: m, cache: resolveCache(m, undefined, undefined, undefined) });
    assert.deepEqual(attached(v), { status: 'True', reason: 'NotApplicable' });
  });

  it('is Unknown/Unmanaged when every role takes over its command', () => {
    assert.deepEqual(attached(view({ roles: [role({ unmanaged: true })] })), {
      status: 'Unknown',
      reason: 'Unmanaged',
    });
  });

  it('is Unknown/NoReplicaReady while no replica is ready', () => {
    assert.deepEqual(attached(view({ roles: [role({ ready: 0 })], reports: active })), {
      status: 'Unknown',
      reason: 'NoReplicaReady',
    });
  });

  it('is CacheActive from the engines’ own counters, naming the keys stored and loaded', () => {
    const d = decideDeployment(view({ reports: active }));
    assert.deepEqual(conditionOf(d, 'CacheAttached'), { status: 'True', reason: 'CacheActive' });
    assert.equal(messageOf(d, 'CacheAttached'), 'ready replicas report 40 store key(s) written and 12 read');
  });

  it('is CacheActive from SGLang’s HiCache storage counters, in tokens', () => {
    const sglang: ReplicaReading = {
      totals: { storedTokens: 3072, loadedTokens: 1024, prefixHitTokens: 1024 },
      recent: 'active',
    };
    assert.equal(
      messageOf(decideDeployment(view({ reports: sglang })), 'CacheAttached'),
      'ready replicas report 3072 token(s) backed up to the store and 1024 prefetched',
    );
  });

  it('turns False when replicas that worked now only fail, naming the failed keys and the last success', () => {
    const failing: ReplicaReading = {
      totals: { storedKeys: 40, loadedKeys: 12, failedKeys: 12 },
      recent: 'failing',
      failedKeys: 12,
      lastSuccessAt: '2026-01-01T10:00:00Z',
    };
    const d = decideDeployment(view({ reports: failing, domainUsageBytes: 4096 }));
    assert.deepEqual(conditionOf(d, 'CacheAttached'), {
      status: 'False',
      reason: CacheAttachedReason.CacheOperationsFailing,
    });
    assert.equal(
      messageOf(d, 'CacheAttached'),
      'ready replicas report 12 failed store key(s) and no successful one since 2026-01-01T10:00:00Z',
    );
  });

  it('is False when replicas never stored or loaded a key and some failed', () => {
    const never: ReplicaReading = {
      totals: { storedKeys: 0, failedKeys: 4 },
      recent: 'failing',
      failedKeys: 4,
    };
    const d = decideDeployment(view({ reports: never }));
    assert.equal(conditionOf(d, 'CacheAttached')?.status, 'False');
    assert.equal(
      messageOf(d, 'CacheAttached'),
      'ready replicas report 4 failed store key(s) and no successful one since they were first read',
    );
  });

  it('is CacheActive from the shared domain’s usage when no replica reports', () => {
    assert.deepEqual(attached(view({ domainUsageBytes: 4096 })), { status: 'True', reason: 'CacheActive' });
  });

  it('is NoObservationAvailable when nothing was reported and the domain is empty (idle is not detached)', () => {
    const quiet: ReplicaReading = { totals: { prefixHitTokens: 0 }, recent: 'quiet' };
    for (const v of [view(), view({ domainUsageBytes: 0 }), view({ reports: quiet })]) {
      assert.deepEqual(attached(v), { status: 'Unknown', reason: 'NoObservationAvailable' });
    }
  });
});

describe('decideDeployment: prompt tokens served from the pool', () => {
  const served = (reports?: ReplicaReading) => decideDeployment(view({ reports })).status.poolPrefix;

  it('carries the replicas’ external prefix-cache tokens and their ratio', () => {
    assert.deepEqual(served(active), { hitTokens: 768, queriedTokens: 1536, hitRatio: '0.5' });
  });

  it('has no ratio without queries (SGLang counts none), and nothing when nothing was reported', () => {
    assert.deepEqual(served({ totals: { loadedTokens: 64, prefixHitTokens: 64 }, recent: 'active' }), {
      hitTokens: 64,
    });
    assert.deepEqual(served({ totals: { prefixHitTokens: 0, prefixQueriedTokens: 0 }, recent: 'quiet' }), {
      hitTokens: 0,
      queriedTokens: 0,
    });
    assert.equal(served(undefined), undefined);
    assert.equal(served({ totals: { storedKeys: 3 }, recent: 'active' }), undefined);
  });
});

describe('decideDeployment: rollout and phase', () => {
  const upToDate = (v: DeploymentView) => conditionOf(decideDeployment(v), 'ReplicasUpToDate');

  it('says a rollout is held by the cache when no connection resolved', () => {
    assert.deepEqual(upToDate(view({ heldByCache: true, roles: [role({ updated: 0 })] })), {
      status: 'False',
      reason: 'RolloutHeldByCache',
    });
  });

  it('says which roles are still rolling out, then UpToDate', () => {
    const d = decideDeployment(view({ roles: [role({ updated: 1 })] }));
    assert.deepEqual(conditionOf(d, 'ReplicasUpToDate'), { status: 'False', reason: 'RolloutInProgress' });
    assert.match(d.conditions.find((c) => c.type === 'ReplicasUpToDate')!.message, /server 1\/2/);
    assert.deepEqual(upToDate(view()), { status: 'True', reason: 'UpToDate' });
  });

  it('is Starting with no replica ready, Degraded with some, Ready with all', () => {
    const starting = decideDeployment(view({ roles: [role({ ready: 0 })] }));
    assert.equal(starting.phase, 'Starting');
    assert.match(starting.phaseMessage, /server 0\/2/);
    const degraded = decideDeployment(
      view({
        roles: [
          role({ name: 'prefill', kind: 'Prefill', desired: 1, ready: 1 }),
          role({ name: 'decode', kind: 'Decode', ready: 0 }),
        ],
      }),
    );
    assert.equal(degraded.phase, 'Degraded');
    assert.match(degraded.phaseMessage, /decode 0\/2/);
    const ready = decideDeployment(view());
    assert.equal(ready.phase, 'Ready');
    assert.equal(ready.status.endpoint, 'http://chat.team-a.svc:8000');
    // The <md> Service listens on 8000 whatever port the first role serves on.
    const onOtherPort = md();
    onOtherPort.spec.roles[0]!.ports = [{ port: 9000 }];
    assert.equal(decideDeployment(view({ md: onOtherPort })).status.endpoint, 'http://chat.team-a.svc:8000');
    assert.equal(ready.status.kvCache?.domain?.name, 'qwen-fp8-v1');
  });

  it('shows a render failure in status: ReplicasUpToDate RenderFailed, the phase never Ready', () => {
    const why = 'role server: InstanceType gone does not exist; pick one from kubectl get instancetype';
    const d = decideDeployment(view({ renderFailure: why }));
    assert.deepEqual(conditionOf(d, 'ReplicasUpToDate'), { status: 'False', reason: 'RenderFailed' });
    assert.equal(d.phase, 'Degraded', 'its replicas run as they were, all ready');
    assert.equal(
      d.phaseMessage,
      `the roles cannot be rendered, so nothing of this spec is applied and the replicas run as they were: ${why}`,
    );
    assert.equal(
      decideDeployment(view({ renderFailure: why, roles: [role({ ready: 0 })] })).phase,
      'Starting',
    );
  });

  it('names a child whose name another object holds: ReplicasUpToDate ChildConflict, never Ready, no endpoint to that object', () => {
    const taken = { kind: 'Service', namespace: 'team-a', name: 'chat' };
    const d = decideDeployment(view({ conflicts: [taken] }));
    assert.deepEqual(conditionOf(d, 'ReplicasUpToDate'), { status: 'False', reason: 'ChildConflict' });
    assert.match(
      messageOf(d, 'ReplicasUpToDate'),
      /^Service team-a\/chat \(no controller owns it\) already exists/,
    );
    assert.equal(d.phase, 'Degraded', 'every replica is ready, and still a Service is missing');
    assert.equal(d.phaseMessage, messageOf(d, 'ReplicasUpToDate'));
    assert.equal(d.status.endpoint, undefined);
    const taken2 = { kind: 'Deployment', namespace: 'team-a', name: 'chat-server' };
    const starting = decideDeployment(view({ conflicts: [taken2], roles: [role({ ready: 0 })] }));
    assert.equal(starting.phase, 'Starting');
    assert.equal(starting.status.endpoint, 'http://chat.team-a.svc:8000');
  });

  it('is Deleting while being deleted, whatever its replicas', () => {
    assert.equal(decideDeployment(view({ md: md({ deleting: true }) })).phase, 'Deleting');
  });

  it('summarises ready instances by kind, prefill before decode', () => {
    assert.equal(roleSummary([role()]), '2S');
    assert.equal(
      roleSummary([
        role({ name: 'decode', kind: 'Decode', ready: 1 }),
        role({ name: 'prefill', kind: 'Prefill', ready: 1 }),
      ]),
      '1P1D',
    );
    assert.equal(roleSummary([role({ name: 'a', ready: 1 }), role({ name: 'b', ready: 2 })]), '3S');
  });
});
