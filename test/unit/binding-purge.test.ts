// Draining a deleted Binding's domain (decision 32): which requests a ledger pass sends the master
// (a purge only for a domain every releasing Binding asks for, never on a store with a disk tier, the
// delete tried again after it), and what shows a store has a disk tier.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { KVCachePoolBinding } from '../../src/api/types.ts';
import { executeLedger, type PurgeHazard } from '../../src/controllers/pool/ledger.ts';
import { planLedger } from '../../src/controllers/pool/plan.ts';
import { diskTierEvidence } from '../../src/controllers/pool/purge-safety.ts';
import { parsePrometheusText } from '../../src/store/prometheus.ts';
import { type LedgerEntry, LedgerError, type TenantLedger } from '../../src/store/tenant-ledger.ts';
import { backend, binding, externalBackend, group, pool } from '../builders/index.ts';

const purge = { 'kvcache.gpustack.ai/purge-on-delete': 'true' };

/** A master holding `objects` per tenant, each at an 8Gi ceiling: a delete is refused while a tenant holds any. */
function fakeMaster(objects: Record<string, number>, leased: Record<string, number> = {}) {
  const calls: string[] = [];
  const entries = (): LedgerEntry[] =>
    Object.keys(objects).map((tenant) => ({ tenant, requestedBytes: 8n << 30n, explicitPolicy: true }));
  const ledger = {
    async list() {
      calls.push('GET');
      return entries();
    },
    async put(tenant: string) {
      calls.push(`PUT ${tenant}`);
      return entries()[0]!;
    },
    async delete(tenant: string) {
      calls.push(`DELETE ${tenant}`);
      if (objects[tenant]) throw new LedgerError({ kind: 'TenantNotEmpty', message: 'TENANT_NOT_EMPTY' });
      delete objects[tenant];
    },
    async purge(tenant: string) {
      calls.push(`PURGE ${tenant}`);
      const removed = (objects[tenant] ?? 0) - (leased[tenant] ?? 0);
      objects[tenant] = leased[tenant] ?? 0;
      return removed;
    },
  };
  return { calls, objects, ledger: ledger as unknown as TenantLedger };
}

async function pass(
  master: ReturnType<typeof fakeMaster>,
  bindings: KVCachePoolBinding[],
  hazard: PurgeHazard = async () => undefined,
) {
  const input = {
    pools: [pool()],
    bindings,
    isHeld: () => false,
    registered: new Set(Object.keys(master.objects)),
  };
  const unlisted = planLedger({ ...input, ledger: undefined });
  return executeLedger(master.ledger, input, unlisted, async () => undefined, hazard);
}

describe('a ledger pass over a deleted Binding whose domain holds data', () => {
  it('removes nothing without purge-on-delete: the delete is refused and the domain retained', async () => {
    const master = fakeMaster({ chat: 3, other: 2 });
    const out = await pass(master, [
      binding('team-a', 'chat', { domain: 'chat', deleting: true }),
      binding('team-b', 'other', { domain: 'other' }),
    ]);
    assert.deepEqual(master.calls, ['GET', 'DELETE chat']);
    assert.deepEqual([...out.retained], ['chat']);
    assert.equal(out.deleteFailures.get('chat')?.kind, 'TenantNotEmpty');
    assert.deepEqual(master.objects, { chat: 3, other: 2 });
  });

  it('with it, removes that domain’s objects only, then deletes the tenant', async () => {
    const master = fakeMaster({ chat: 3, other: 2 });
    const out = await pass(master, [
      binding('team-a', 'chat', { domain: 'chat', deleting: true, annotations: purge }),
      binding('team-b', 'other', { domain: 'other' }),
    ]);
    assert.deepEqual(master.calls, ['GET', 'DELETE chat', 'PURGE chat', 'DELETE chat']);
    assert.deepEqual(out.purged, new Map([['chat', 3]]));
    assert.deepEqual([...out.deleted], ['chat']);
    assert.equal(out.deleteFailures.size, 0);
    assert.deepEqual(master.objects, { other: 2 });
  });

  it('keeps the domain while leased objects remain, and says what it removed', async () => {
    const master = fakeMaster({ chat: 3 }, { chat: 1 });
    const out = await pass(master, [
      binding('team-a', 'chat', { domain: 'chat', deleting: true, annotations: purge }),
    ]);
    assert.deepEqual(out.purged, new Map([['chat', 2]]));
    assert.deepEqual([...out.retained], ['chat']);
  });

  it('never purges on a store with a disk tier, and says what shows the tier', async () => {
    const master = fakeMaster({ chat: 3 });
    const out = await pass(
      master,
      [binding('team-a', 'chat', { domain: 'chat', deleting: true, annotations: purge })],
      async () => 'its master reports 16Mi held on a disk tier of 0',
    );
    assert.deepEqual(master.calls, ['GET', 'DELETE chat']);
    assert.equal(out.purgeRefused.get('chat'), 'its master reports 16Mi held on a disk tier of 0');
    assert.deepEqual([...out.retained], ['chat']);
  });

  it('does not purge when the disk-tier check cannot be made, and reports the failure', async () => {
    const master = fakeMaster({ chat: 3 });
    const out = await pass(
      master,
      [binding('team-a', 'chat', { domain: 'chat', deleting: true, annotations: purge })],
      async () => {
        throw new Error('metrics: connect ECONNREFUSED');
      },
    );
    assert.deepEqual(master.calls, ['GET', 'DELETE chat']);
    assert.deepEqual(out.deleteFailures.get('chat'), {
      kind: 'LedgerUnreachable',
      message: 'metrics: connect ECONNREFUSED',
    });
  });

  it('asks for the disk-tier check once a pass, and only when a purge is due', async () => {
    let asked = 0;
    const hazard = async () => {
      asked += 1;
      return undefined;
    };
    await pass(
      fakeMaster({ chat: 3 }),
      [binding('team-a', 'chat', { domain: 'chat', deleting: true })],
      hazard,
    );
    assert.equal(asked, 0);
    const both = ['a', 'b'].map((d) =>
      binding('team-a', d, { domain: d, deleting: true, annotations: purge }),
    );
    await pass(fakeMaster({ a: 1, b: 1 }), both, hazard);
    assert.equal(asked, 1);
  });
});

describe('diskTierEvidence', () => {
  const metrics = (file: number, capacity: number) =>
    parsePrometheusText(
      `master_allocated_file_size_bytes ${file}\nmaster_total_file_capacity_bytes ${capacity}\n`,
    );
  const tier = { path: '/var/lib/kvcache' } as never;

  it('finds a tier a managed backend declares, even before anything was written to it', () => {
    const withTier = backend('dram', { groups: [group(), group({ localDisks: [tier] })] });
    assert.equal(diskTierEvidence(withTier, metrics(0, 0)), 'a member group declares localDisks');
  });

  it('finds a tier the master reports, for an external backend', () => {
    assert.equal(
      diskTierEvidence(externalBackend(), metrics(16 << 20, 0)),
      'its master reports 16Mi held on a disk tier of 0',
    );
    assert.match(diskTierEvidence(externalBackend(), metrics(0, 1 << 30)) ?? '', /disk tier of 1Gi/);
  });

  it('finds none on a memory-only store', () => {
    assert.equal(diskTierEvidence(backend(), metrics(0, 0)), undefined);
    assert.equal(diskTierEvidence(externalBackend(), new Map()), undefined);
  });
});
