// Condition types and reasons are named once, in each kind's table under src/api/: deciding or reading
// one the table lacks fails the typecheck (the @ts-expect-error lines below), and the troubleshooting
// page names only signals the tables hold.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { projectRoot } from '../../images/toolchain.ts';
import { conditionOf, conditionTables } from '../../src/api/conditions.ts';
import { PoolReason, poolConditions } from '../../src/api/kvcache-pool-conditions.ts';
import { deciderOf } from '../../src/vocabulary/conditions.ts';
import { pool } from '../builders/index.ts';

const tables = Object.values(conditionTables);
const reasonsOf = (type: string) =>
  new Set(tables.flatMap((t) => (t as Record<string, readonly string[]>)[type] ?? []));

describe('condition tables', () => {
  it('fail the typecheck on a type or reason they lack', () => {
    const decided = deciderOf(poolConditions);
    const off = decided('QuotaLedgerAvailable', 'False', PoolReason.MultiTenancyDisabled, 'off');
    // @ts-expect-error a misspelt reason
    decided('QuotaLedgerAvailable', 'False', 'MultiTenancyDisable', 'off');
    // @ts-expect-error a reason of another type
    decided('QuotaLedgerAvailable', 'False', 'Oversubscribed', 'off');
    // @ts-expect-error a type the kind does not report
    conditionOf(pool('p'), 'LeaderAvailable');
    const read = conditionOf(pool('p'), 'QuotaLedgerAvailable');
    // @ts-expect-error a reason read back is compared against the table's
    assert.equal(read?.reason === 'MultiTenancyDisable', false);
    assert.equal(off.reason, 'MultiTenancyDisabled');
  });

  it('hold every condition and reason the troubleshooting table names as a signal', () => {
    const page = readFileSync(join(projectRoot, 'docs', 'troubleshooting.md'), 'utf8');
    const signals = page
      .split('\n')
      .filter((l) => /^\| `[a-z-]+` \|/.test(l))
      .map((l) => l.split(' | ')[2]!);
    assert.ok(signals.length >= 10, 'the table has its rows');
    const unknown: string[] = [];
    for (const signal of signals) {
      for (const [, type, , group] of signal.matchAll(/`(\w+)=(True|False|Unknown)`(?: \(([^)]*)\))?/g)) {
        const reasons = reasonsOf(type!);
        if (!reasons.size) unknown.push(type!);
        for (const [, reason] of (group ?? '').matchAll(/`([A-Z][A-Za-z]+)`(?! Event)/g))
          if (!reasons.has(reason!)) unknown.push(`${type}: ${reason}`);
      }
    }
    assert.deepEqual(unknown, []);
  });
});
