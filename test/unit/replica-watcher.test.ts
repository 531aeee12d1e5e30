// What engine replicas report about the cache is read by a watcher on its own schedule, which wakes the
// deployment's pass only when the verdict (none, any success, any failure) changes. The reader is the
// test's: it stands for the replicas' /metrics.

import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import type { CacheReports } from '../../src/store/replica-reports.ts';
import { ReplicaReportWatcher } from '../../src/store/replica-watcher.ts';
import { waitFor } from '../support/wait.ts';

describe('ReplicaReportWatcher', () => {
  let reading: CacheReports | undefined;
  const asked: string[][] = [];
  const watcher = new ReplicaReportWatcher(20, async (endpoints) => {
    asked.push(endpoints);
    return reading && { ...reading };
  });
  after(() => watcher.stop());

  it('reads the followed replicas and wakes the pass when their verdict changes, not on every count', async () => {
    let wakes = 0;
    watcher.follow('team-a/chat', ['10.0.0.2:8000', '10.0.0.1:8000'], () => wakes++);
    await waitFor(() => (wakes === 1 ? true : undefined), { what: 'the first reading', timeoutMs: 2000 });
    assert.deepEqual(asked[0], ['10.0.0.1:8000', '10.0.0.2:8000']);
    assert.equal(watcher.latest('team-a/chat'), undefined, 'no replica reported');
    reading = { successes: 1, failures: 0 };
    await waitFor(() => (wakes === 2 ? true : undefined), {
      what: 'a wake on the first success',
      timeoutMs: 2000,
    });
    assert.deepEqual(watcher.latest('team-a/chat'), { successes: 1, failures: 0 });
    reading = { successes: 5, failures: 0 };
    const before = asked.length;
    await waitFor(() => (asked.length > before + 2 ? true : undefined), {
      what: 'more readings',
      timeoutMs: 2000,
    });
    assert.equal(wakes, 2, 'more successes change no verdict');
    assert.deepEqual(watcher.latest('team-a/chat'), { successes: 5, failures: 0 });
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
