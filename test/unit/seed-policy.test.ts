// The policy a managed leader seeds at start (KV-cache spec §4.5, §5.3): the master's whole explicit
// ledger as the pass leaves it, so a new leader after a failover starts with every tenant, the
// Bindings' and everyone else's.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parsePolicy, renderPolicy, seedTenants } from '../../src/controllers/pool/seed-policy.ts';
import type { LedgerEntry } from '../../src/store/tenant-ledger.ts';

const MiB = 1n << 20n;
const entry = (tenant: string, bytes: bigint, explicitPolicy?: boolean): LedgerEntry => ({
  tenant,
  requestedBytes: bytes,
  ...(explicitPolicy === undefined ? {} : { explicitPolicy }),
});

describe('seedTenants', () => {
  it('keeps every explicit entry the master lists, with the Bindings’ ceilings over their own', () => {
    const seeded = seedTenants({
      desired: new Map([['team-a', 64n * MiB]]),
      registered: new Set(['team-a']),
      listed: [
        entry('team-a', 32n * MiB, true),
        entry('someone-else', 8n * MiB, true),
        entry('unsaid', 4n * MiB),
        entry('implicit', 0n, false),
      ],
    });
    assert.deepEqual(
      [...seeded],
      [
        ['team-a', 64n * MiB],
        ['someone-else', 8n * MiB],
        ['unsaid', 4n * MiB],
      ],
    );
  });

  it('drops what the pass deleted', () => {
    const seeded = seedTenants({
      desired: new Map(),
      registered: new Set(['kept']),
      listed: [entry('gone', MiB, true), entry('kept', MiB, true)],
      deleted: new Set(['gone']),
    });
    assert.deepEqual([...seeded.keys()], ['kept']);
  });

  it('merges with the policy seeded before when the master could not be read', () => {
    const seeded = seedTenants({
      desired: new Map([['team-a', 16n * MiB]]),
      registered: new Set(['team-a']),
      previous: new Map([
        ['team-a', 8n * MiB],
        ['someone-else', 8n * MiB],
      ]),
    });
    assert.deepEqual(
      [...seeded],
      [
        ['team-a', 16n * MiB],
        ['someone-else', 8n * MiB],
      ],
    );
  });
});

describe('seedTenants: a Binding’s tenant not registered yet', () => {
  it('is not seeded: a leader started from the seed would hold a tenant nobody registered', () => {
    const seeded = seedTenants({ desired: new Map([['team-a', 16n * MiB]]), registered: new Set() });
    assert.deepEqual([...seeded], []);
  });
});

describe('parsePolicy', () => {
  it('reads back what renderPolicy wrote', () => {
    const tenants = new Map([
      ['b', 2n * MiB],
      ['a', MiB],
    ]);
    assert.deepEqual(parsePolicy(renderPolicy(tenants)), new Map([...tenants].sort()));
  });

  it('reads nothing from an absent or unreadable document', () => {
    assert.deepEqual(parsePolicy(undefined), new Map());
    assert.deepEqual(parsePolicy('tenants: [: :'), new Map());
  });
});
