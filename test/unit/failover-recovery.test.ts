// status.lastFailover: a new master is told from the one read before (another address, or request
// counters that started again), and the members' re-registration is followed on its tier figures until
// they reach the previous master's, over /metrics recorded from the real master (a write-through tier of
// two members: 160 objects written, 128 on the tier, the master SIGKILLed and started again).
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import type { LastFailover } from '../../src/api/kvcache-backend.ts';
import {
  advanceFailover,
  type FailoverMemory,
  type FailoverOptions,
  warmSeconds,
} from '../../src/controllers/backend/status-failover.ts';
import { anotherMaster, type MasterSighting, sightingOf } from '../../src/store/master-sighting.ts';
import type { StoreObservation } from '../../src/store/observe.ts';
import { parsePrometheusText } from '../../src/store/prometheus.ts';
import { goldenTests } from './golden.ts';

const fixture = (name: string) =>
  readFileSync(new URL(`./fixtures/store/failover-${name}.txt`, import.meta.url), 'utf8');
const recorded = {
  old: fixture('old-master'),
  empty: fixture('new-master-empty'),
  oneMember: fixture('new-master-one-member'),
  bothMembers: fixture('new-master-both-members'),
};

const t0 = Date.UTC(2026, 11, 2, 11, 0, 0);
const address = '10.0.0.7:9003';

function observation(text: string, ms: number, at = address): StoreObservation {
  return {
    address: at,
    at: t0 + ms,
    health: { ok: true, value: { serviceReady: true } },
    metrics: { ok: true, value: parsePrometheusText(text) },
  };
}

const unreachable = (ms: number): StoreObservation => ({
  address,
  at: t0 + ms,
  health: { ok: false, reason: 'Unreachable', message: 'connection refused' },
});

/** The record after each reading, in order, from an operator that has read nothing before. */
function follow(
  readings: (StoreObservation | undefined)[],
  options: FailoverOptions = { tier: true },
  start: { record?: LastFailover; memory?: FailoverMemory } = {},
) {
  let record = start.record;
  let memory = start.memory ?? {};
  const records: (LastFailover | undefined)[] = [];
  for (const o of readings) {
    ({ record, memory } = advanceFailover(record, memory, sightingOf(o), options));
    records.push(record);
  }
  return records;
}

// The real master's readings, 0.4 s apart as the operator's watcher could read them.
const failover = [
  observation(recorded.old, 0),
  unreachable(400),
  observation(recorded.empty, 800),
  observation(recorded.empty, 1200),
  observation(recorded.oneMember, 2000),
  observation(recorded.bothMembers, 2200),
  observation(recorded.bothMembers, 20_000),
];

describe('sightingOf and anotherMaster, on the real master’s /metrics', () => {
  it('reads the tier figures: 128 objects and 32 MiB before the kill, none on the new master until the members re-register', () => {
    const old = sightingOf(failover[0])!;
    assert.deepEqual(old.tier, { objects: 128, bytes: 32n << 20n });
    assert.deepEqual(sightingOf(failover[2])!.tier, { objects: 0, bytes: 0n });
    assert.deepEqual(sightingOf(failover[4])!.tier, { objects: 64, bytes: 16n << 20n });
  });

  it('tells a restarted master at the same address by its request counters, which start again', () => {
    const old = sightingOf(failover[0])!;
    const fresh = sightingOf(failover[2])!;
    assert.ok(old.requests! > fresh.requests!, `${old.requests} then ${fresh.requests}`);
    assert.equal(anotherMaster(old, fresh), true);
    assert.equal(anotherMaster(fresh, sightingOf(failover[5])!), false, 'the same master, counting on');
  });

  it('tells a master at another address (a standby that took over), whatever its counters', () => {
    const a: MasterSighting = { address, at: t0, requests: 5, tier: {}, dram: {} };
    assert.equal(anotherMaster(a, { ...a, address: '10.0.0.8:9003', requests: 900 }), true);
    assert.equal(anotherMaster(a, { ...a, requests: undefined }), false, 'no counters: no verdict');
  });

  it('reads nothing from a master that is not serving or whose metrics failed', () => {
    assert.equal(sightingOf(unreachable(0)), undefined);
    const notReady = { ...failover[0]!, health: { ok: true as const, value: { serviceReady: false } } };
    assert.equal(sightingOf(notReady), undefined);
  });
});

describe('advanceFailover', () => {
  goldenTests(new URL('./golden/failover/', import.meta.url), { 'sigkill-restart': failover }, (readings) =>
    follow(readings),
  );

  it('records the failover, follows the re-registration and is warm when all 128 objects and 32Mi are back', () => {
    const records = follow(failover);
    assert.equal(records[0], undefined, 'the first master read is no failover');
    assert.equal(records[1], undefined, 'an unreachable master changes nothing');
    assert.deepEqual(records[2], {
      at: '2026-12-02T11:00:00.800Z',
      master: address,
      tierObjectsBefore: 128,
      tierBytesBefore: '32Mi',
      // A new master without replicated metadata starts with no object in memory.
      dramKeysBefore: 160,
      dramBytesBefore: '40Mi',
      dramKeysAfter: 0,
      dramBytesAfter: '0',
      reRegisteredObjects: 0,
      reRegisteredBytes: '0',
    });
    assert.equal(records[4]?.reRegisteredObjects, 64);
    assert.equal(records[4]?.warmAt, undefined, 'one member of two re-registered: not warm');
    assert.deepEqual(records[5], {
      ...records[2],
      // The new master's index grows with the re-registration (master_key_count).
      dramKeysAfter: 128,
      reRegisteredObjects: 128,
      reRegisteredBytes: '32Mi',
      warmAt: '2026-12-02T11:00:02.200Z',
    });
    assert.equal(warmSeconds(records[5]), 1.4);
    assert.strictEqual(records[6], records[5], 'a warm record is kept as it is: an idle pass writes nothing');
  });

  it('without the previous master’s figures (the operator started after the kill), is warm once the figures held for 45 s, at the reading they last moved', () => {
    const open: LastFailover = { at: '2026-12-02T11:00:00.800Z', master: address, reRegisteredObjects: 64 };
    const records = follow(
      [
        observation(recorded.oneMember, 2000),
        observation(recorded.bothMembers, 2200),
        observation(recorded.bothMembers, 47_100),
        observation(recorded.bothMembers, 47_300),
      ],
      { tier: true },
      { record: open },
    );
    assert.equal(records[1]?.reRegisteredObjects, 128);
    assert.equal(records[2]?.warmAt, undefined, '44.9 s without a move');
    assert.equal(records[3]?.warmAt, '2026-12-02T11:00:02.200Z');
  });

  it('when fewer come back than the previous master had (a member gone with it), is warm after 45 s and says both', () => {
    const records = follow(
      [
        ...failover.slice(0, 5),
        observation(recorded.oneMember, 46_999),
        observation(recorded.oneMember, 47_000),
        observation(recorded.oneMember, 60_000),
      ],
      { tier: true },
    );
    assert.equal(records[5]?.warmAt, undefined);
    assert.equal(records[6]?.tierObjectsBefore, 128);
    assert.equal(records[6]?.reRegisteredObjects, 64);
    assert.equal(records[6]?.warmAt, '2026-12-02T11:00:02.000Z');
    assert.deepEqual(records[7], records[6], 'figures that hold change nothing: an idle pass writes nothing');
  });

  it('follows a member that re-registers after the figures held: the counts and warmAt move to it', () => {
    const records = follow(
      [
        ...failover.slice(0, 5),
        observation(recorded.oneMember, 47_000),
        observation(recorded.bothMembers, 70_000),
        observation(recorded.bothMembers, 71_000),
      ],
      { tier: true },
    );
    assert.equal(records[5]?.reRegisteredObjects, 64);
    assert.equal(records[5]?.warmAt, '2026-12-02T11:00:02.000Z', 'warm as far as was known');
    assert.equal(records[6]?.reRegisteredObjects, 128);
    assert.equal(records[6]?.reRegisteredBytes, '32Mi');
    assert.equal(records[6]?.warmAt, '2026-12-02T11:01:10.000Z', 'warm once every object is back');
    assert.strictEqual(records[7], records[6], 'then kept as it is');
  });

  it('for a backend without a disk tier, records when the new master took over and its memory figures', () => {
    const records = follow(failover, { tier: false });
    assert.deepEqual(records.at(-1), {
      at: '2026-12-02T11:00:00.800Z',
      master: address,
      dramKeysBefore: 160,
      dramBytesBefore: '40Mi',
      dramKeysAfter: 128,
      dramBytesAfter: '0',
    });
  });

  it('replaces the record at the next failover, to a standby at another address', () => {
    const records = follow([...failover, observation(recorded.empty, 30_000, '10.0.0.9:9003')]);
    assert.deepEqual(records.at(-1), {
      at: '2026-12-02T11:00:30.000Z',
      master: '10.0.0.9:9003',
      tierObjectsBefore: 128,
      tierBytesBefore: '32Mi',
      dramKeysBefore: 128,
      dramBytesBefore: '0',
      dramKeysAfter: 0,
      dramBytesAfter: '0',
      reRegisteredObjects: 0,
      reRegisteredBytes: '0',
    });
  });

  it('keeps its record when the next pass reads a status that does not hold it yet (the informer lags the write)', () => {
    let memory: FailoverMemory = {};
    let record: LastFailover | undefined;
    for (const o of failover.slice(0, 3))
      ({ record, memory } = advanceFailover(record, memory, sightingOf(o), { tier: true }));
    const written = record;
    assert.equal(written?.tierObjectsBefore, 128, 'the failover was recorded');
    // The next pass's backend comes from the informer, which has not seen that status write yet.
    const next = advanceFailover(undefined, memory, sightingOf(failover[3]), { tier: true });
    assert.equal(next.record?.at, written?.at, 'the record is not dropped by a stale read');
    assert.equal(next.record?.tierObjectsBefore, 128);
    // And a stale copy of the same record (fewer figures) does not undo what the last pass followed.
    const later = advanceFailover(written, next.memory, sightingOf(failover[5]), { tier: true });
    assert.equal(later.record?.reRegisteredObjects, 128);
  });

  it('keeps a record of another master as it is (written before the operator restarted)', () => {
    const old: LastFailover = { at: '2026-12-01T00:00:00.000Z', master: '10.0.0.1:9003' };
    const records = follow([observation(recorded.bothMembers, 0)], { tier: true }, { record: old });
    assert.strictEqual(records[0], old);
  });
});
