// What engine replicas report about the cache is read by a watcher on its own schedule, which keeps each
// replica's previous reading and wakes the deployment's pass only when the verdict (none, quiet, active,
// failing) changes. The reader is the test's: it stands for the replicas' /metrics.

import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import type { CacheReports } from '../../src/store/replica-reports.ts';
import { ReplicaReportWatcher } from '../../src/store/replica-watcher.ts';
import { waitFor } from '../support/wait.ts';

describe('ReplicaReportWatcher', () => {
  const replicas = new Map<string, CacheReports>();
  const asked: string[][] = [];
  const watcher = new ReplicaReportWatcher(20, async (endpoints) => {
    asked.push(endpoints);
    return new Map(endpoints.flatMap((e) => (replicas.has(e) ? [[e, { ...replicas.get(e)! }]] : [])));
  });
  after(() => watcher.stop());
  const readings = async (n: number) => {
    const before = asked.length;
    await waitFor(() => (asked.length >= before + n ? true : undefined), {
      what: `${n} readings`,
      timeoutMs: 2000,
    });
  };

  it('wakes the pass when the verdict changes, not on every count, and turns failing after working', async () => {
    let wakes = 0;
    watcher.follow('team-a/chat', ['10.0.0.2:8000', '10.0.0.1:8000'], () => wakes++);
    await waitFor(() => (wakes === 1 ? true : undefined), { what: 'the first reading', timeoutMs: 2000 });
    assert.deepEqual(asked[0], ['10.0.0.1:8000', '10.0.0.2:8000']);
    assert.equal(watcher.latest('team-a/chat'), undefined, 'no replica reported');

    replicas.set('10.0.0.1:8000', { storedKeys: 4, failedKeys: 0 });
    await waitFor(() => (wakes === 2 ? true : undefined), {
      what: 'a wake on the first success',
      timeoutMs: 2000,
    });
    assert.equal(watcher.latest('team-a/chat')?.recent, 'active');

    replicas.set('10.0.0.1:8000', { storedKeys: 9, failedKeys: 0 });
    replicas.set('10.0.0.2:8000', { storedKeys: 3, failedKeys: 0 });
    await readings(3);
    assert.equal(wakes, 2, 'more successes change no verdict');
    assert.deepEqual(watcher.latest('team-a/chat')?.totals, { storedKeys: 12, failedKeys: 0 });

    // The tenant is gone from the ledger: every write fails, the old successes stay in the totals.
    replicas.set('10.0.0.1:8000', { storedKeys: 9, failedKeys: 5 });
    await waitFor(() => (wakes === 3 ? true : undefined), { what: 'a wake on failing', timeoutMs: 2000 });
    assert.deepEqual(
      { ...watcher.latest('team-a/chat'), lastSuccessAt: undefined },
      {
        totals: { storedKeys: 12, failedKeys: 5 },
        recent: 'failing',
        failedKeys: 5,
        lastSuccessAt: undefined,
      },
    );
    await readings(3);
    assert.equal(wakes, 3, 'idle after failing stays failing');
  });

  it('stops reading a deployment that has no ready replica left', async () => {
    watcher.follow('team-a/chat', [], () => {});
    const count = asked.length;
    // Another deployment's readings show the watcher's periods passing meanwhile.
    watcher.follow('team-b/other', ['10.0.1.1:8000'], () => {});
    const other = () => asked.slice(count).filter((e) => e[0] === '10.0.1.1:8000').length;
    await waitFor(() => (other() >= 3 ? true : undefined), { what: 'three periods', timeoutMs: 2000 });
    const chat = asked.slice(count).filter((e) => e[0] === '10.0.0.1:8000').length;
    assert.ok(chat <= 1, `at most a reading already under way, got ${chat}`);
    assert.equal(watcher.latest('team-a/chat'), undefined);
  });
});
