// A full tier disk (decision 39): what a member's kvpool-store counts and reads of its tier, the /tier
// reply the operator parses, and TierWritable decided from those replies. The store's lines below are
// the member's own, as logged when a bucket did not fit its filesystem.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { BackendCondition, BackendReason } from '../../src/api/kvcache-backend-conditions.ts';
import type { KVCacheBackend } from '../../src/api/types.ts';
import { decideTierWritable, type MemberTierReading } from '../../src/controllers/backend/tier-health.ts';
import { tierFull } from '../../src/kubectl-kvpool/doctor-tier.ts';
import type { Snapshot } from '../../src/kubectl-kvpool/snapshot.ts';
import { storeWords, TierStatus } from '../../src/kvpool-store/tier-status.ts';
import { parseTierReport, type TierReport } from '../../src/store/member-tier.ts';
import { backend, group } from '../builders/index.ts';

const MiB = 1 << 20;
const now = new Date('2026-12-02T12:00:00Z');
const storeLines = [
  'W1202 14:12:35.687457  7249 storage_backend.cpp:3006] [Evict] Actual disk space too low: available=65536, required=1048648, deficit=269418568. Will evict buckets to free space.',
  'E1202 14:12:35.687615  7249 storage_backend.cpp:2691] Write size mismatch for: /var/lib/kvcache/7357320146945.bucket, expected: 1048648, got: 65536',
  'E1202 14:12:35.687624  7249 storage_backend.cpp:1800] Failed to write bucket with id: 7357320146945',
  'E1202 14:12:35.687638  7249 file_storage.cpp:509] Failed to store objects with error: FILE_WRITE_FAIL',
  'E1202 14:12:35.687954  7249 file_storage.cpp:776] Failed to persist objects with error: FILE_WRITE_FAIL',
];

describe('a member’s tier status', () => {
  const dir = mkdtempSync(join(tmpdir(), 'kvpool-tier-status-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('counts the store’s FILE_WRITE_FAIL lines and keeps the last in the store’s own words', () => {
    const status = new TierStatus(dir, () => now);
    for (const line of storeLines) status.see(line);
    const r = status.report();
    assert.equal(r.writeFailures, 2);
    assert.deepEqual(r.lastWriteFailure, {
      at: now.toISOString(),
      line: 'Failed to persist objects with error: FILE_WRITE_FAIL',
    });
    assert.equal(r.path, dir);
  });

  it('reads the filesystem under the tier (statfs) and says why when it cannot', () => {
    const r = new TierStatus(dir).report();
    assert.ok(
      r.filesystem && r.filesystem.totalBytes > 0 && r.filesystem.availableBytes <= r.filesystem.totalBytes,
    );
    assert.equal(r.writeFailures, 0);
    assert.equal(r.lastWriteFailure, undefined);
    const gone = new TierStatus(join(dir, 'missing')).report();
    assert.equal(gone.filesystem, undefined, 'a filesystem not read is absent, not zero');
    assert.match(gone.filesystemError ?? '', /ENOENT/);
  });

  it('strips glog’s prefix and leaves other lines alone', () => {
    assert.equal(storeWords(storeLines[2]!), 'Failed to write bucket with id: 7357320146945');
    assert.equal(storeWords('plain words'), 'plain words');
  });

  it('is what the operator parses back, and a malformed reply names the field', () => {
    const status = new TierStatus(dir, () => now);
    status.see(storeLines[3]!);
    assert.deepEqual(parseTierReport(JSON.stringify(status.report())), status.report());
    assert.throws(() => parseTierReport('{"path":"/t"}'), /writeFailures/);
    assert.throws(() => parseTierReport('{"writeFailures":0}'), /path/);
    assert.throws(
      () => parseTierReport('{"path":"/t","writeFailures":0,"filesystem":{"totalBytes":1}}'),
      /availableBytes/,
    );
  });
});

const report = (over: Partial<TierReport> = {}): TierReport => ({
  path: '/var/lib/kvcache',
  filesystem: { totalBytes: 100 * 1024 * MiB, availableBytes: 60 * 1024 * MiB },
  writeFailures: 0,
  ...over,
});
const member = (node: string, r: TierReport | string, group = 0): MemberTierReading => ({
  pod: `tiered-member-0-${node}`,
  node,
  group,
  reading:
    typeof r === 'string' ? { ok: false, reason: 'TierReadFailed', message: r } : { ok: true, value: r },
});
const failedAt = (minutesAgo: number) => ({
  writeFailures: 4,
  lastWriteFailure: {
    at: new Date(now.getTime() - minutesAgo * 60_000).toISOString(),
    line: 'Failed to persist objects with error: FILE_WRITE_FAIL',
  },
});
const full = { filesystem: { totalBytes: 48 * MiB, availableBytes: 64 * 1024 } };

describe('TierWritable', () => {
  it('is absent while no tier member runs', () => {
    assert.equal(decideTierWritable([], now), undefined);
  });

  it('is True/Writable when every member answered without a recent failed write, naming the least room', () => {
    const c = decideTierWritable(
      [
        member('node-a', report()),
        member(
          'node-b',
          report({ filesystem: { totalBytes: 100 * 1024 * MiB, availableBytes: 20 * 1024 * MiB } }),
        ),
      ],
      now,
    )!;
    assert.deepEqual(
      [c.type, c.status, c.reason],
      [BackendCondition.TierWritable, 'True', BackendReason.Writable],
    );
    assert.match(c.message, /least room on node-b: 20Gi free of 100Gi at \/var\/lib\/kvcache/);
  });

  it('is False/WriteFailed naming the node, the count, the store’s line, the room and the fix', () => {
    const c = decideTierWritable(
      [member('node-a', report()), member('node-b', report({ ...failedAt(2), ...full }), 1)],
      now,
    )!;
    assert.deepEqual([c.status, c.reason], ['False', BackendReason.WriteFailed]);
    assert.match(c.message, /on node-b \(4 FILE_WRITE_FAIL lines, the last at 2026-12-02T11:58:00.000Z/);
    assert.match(c.message, /Failed to persist objects with error: FILE_WRITE_FAIL/);
    assert.match(c.message, /64Ki free of 48Mi at \/var\/lib\/kvcache/);
    assert.match(c.message, /stay in memory only and a failover loses them\. /);
    assert.match(c.message, /spec\.connection\.managed\.members\[1\]\.localDisks\[0\]\.capacity/);
    assert.doesNotMatch(c.message, /node-a/);
  });

  it('leaves failures older than the window to history, but a full filesystem is still NoRoom', () => {
    const old = decideTierWritable([member('node-a', report(failedAt(11)))], now)!;
    assert.equal(old.reason, BackendReason.Writable);
    const c = decideTierWritable([member('node-a', report({ ...failedAt(11), ...full }))], now)!;
    assert.deepEqual([c.status, c.reason], ['False', BackendReason.NoRoom]);
    assert.match(
      c.message,
      /less room than one bucket \(16Mi\) and the 256Mi the store keeps free on node-a \(64Ki free of 48Mi/,
    );
    assert.match(c.message, /evicts its own buckets from the tier to make room for each new one/);
  });

  it('is NoRoom below one bucket plus the store’s 256 MiB reserve, the point where the store evicts', () => {
    const at = (availableBytes: number) =>
      decideTierWritable(
        [member('node-a', report({ filesystem: { totalBytes: 1024 * MiB, availableBytes } }))],
        now,
      )?.reason;
    assert.equal(at(272 * MiB), BackendReason.Writable);
    assert.equal(at(272 * MiB - 1), BackendReason.NoRoom);
  });

  it('is Unknown/NotObserved naming the members that did not answer, unless another one failed', () => {
    const silent = member('node-b', 'GET http://10.0.0.2:9110/tier: connect ECONNREFUSED');
    const c = decideTierWritable([member('node-a', report()), silent], now)!;
    assert.deepEqual([c.status, c.reason], ['Unknown', BackendReason.NotObserved]);
    assert.match(
      c.message,
      /tiered-member-0-node-b on node-b: GET http:\/\/10\.0\.0\.2:9110\/tier: connect ECONNREFUSED/,
    );
    assert.match(c.message, /1 of 2 members answered/);
    assert.equal(
      decideTierWritable([member('node-a', report(failedAt(1))), silent], now)?.reason,
      BackendReason.WriteFailed,
    );
  });
});

describe('kubectl kvpool doctor on a full tier', () => {
  const withTier = (reason: string, status: 'True' | 'False' | 'Unknown' = 'False'): KVCacheBackend => {
    const b = backend('tiered', {
      groups: [group({ localDisks: [{ path: '/var/lib/kvcache', capacity: '1Gi' }] })],
    });
    b.status = {
      conditions: [
        {
          type: BackendCondition.TierWritable,
          status,
          reason,
          message: 'on node-b …',
          lastTransitionTime: now.toISOString(),
        },
      ],
    };
    return b;
  };
  const findings = (b: KVCacheBackend) => tierFull.run({ backends: [b] } as unknown as Snapshot);

  it('reports failed writes as an error and a full filesystem as a warning, with the condition as evidence', () => {
    const [failed] = findings(withTier(BackendReason.WriteFailed));
    assert.equal(failed?.object, 'KVCacheBackend/tiered');
    assert.equal(failed?.severity, 'error');
    assert.deepEqual(failed?.evidence, ['TierWritable=False (WriteFailed): on node-b …']);
    assert.match(failed!.fix, /bigger filesystem.*localDisks\[\]\.capacity.*fewer objects/);
    assert.equal(findings(withTier(BackendReason.NoRoom))[0]?.severity, 'warning');
  });

  it('finds nothing while the tier takes its writes or is not observed', () => {
    assert.deepEqual(findings(withTier(BackendReason.Writable, 'True')), []);
    assert.deepEqual(findings(withTier(BackendReason.NotObserved, 'Unknown')), []);
  });
});
