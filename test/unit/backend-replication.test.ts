// MetadataReplicated and EtcdAvailable (decision 50): what a failover now would keep, and whether the
// store's etcd has a quorum, from what the standbys and the etcd members answered.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { decideReplication, lagLimitEntries } from '../../src/controllers/backend/status-replication.ts';

const following = (pod: string, lagEntries: number) => ({
  pod,
  role: 'standby',
  lagEntries,
  appliedSequence: 400,
});
const etcd = (healthy: boolean[]) => ({
  replicas: 3,
  members: healthy.map((h, i) => ({
    pod: `s-etcd-${i}`,
    healthy: h,
    ...(h ? {} : { error: 'connection refused' }),
  })),
});
const verdict = (d: ReturnType<typeof decideReplication>, type: string) =>
  d.conditions.find((c) => c.type === type);

describe('MetadataReplicated', () => {
  it('is True while a standby follows the OpLog, naming the nearest and its lag', () => {
    const d = decideReplication({
      serving: true,
      standbys: [following('a', 12), following('b', 0)],
      etcd: etcd([true, true, true]),
    });
    const c = verdict(d, 'MetadataReplicated');
    assert.equal(c?.status, 'True');
    assert.equal(c?.reason, 'Following');
    assert.match(c!.message, /^2 standby\(s\) follow the OpLog; b is 0 entries behind \(applied to 400\)$/);
    assert.deepEqual(d.figures, { standbys: 2, following: 2, lagEntries: 0, etcdMembers: 3, etcdHealthy: 3 });
  });

  it('is False when no standby follows: a failover now would start empty', () => {
    const none = verdict(decideReplication({ serving: true, standbys: [] }), 'MetadataReplicated');
    assert.equal(none?.reason, 'NoStandby');
    assert.match(none!.message, /no standby runs/);
    const unread = decideReplication({
      serving: true,
      standbys: [{ pod: 'a', error: '10.0.0.5:9003: ECONNREFUSED' }],
    });
    assert.match(verdict(unread, 'MetadataReplicated')!.message, /a \(10\.0\.0\.5:9003: ECONNREFUSED\)/);
    assert.equal(unread.figures.lagEntries, undefined, 'a lag not read is absent, not zero');
  });

  it('is False when even the nearest standby is more than one batch behind', () => {
    const at = decideReplication({ serving: true, standbys: [following('a', lagLimitEntries)] });
    assert.equal(verdict(at, 'MetadataReplicated')?.status, 'True');
    const past = decideReplication({ serving: true, standbys: [following('a', lagLimitEntries + 1)] });
    assert.equal(verdict(past, 'MetadataReplicated')?.reason, 'Lagging');
  });

  it('is Unknown while no master serves', () => {
    assert.equal(
      verdict(decideReplication({ serving: false, standbys: [following('a', 0)] }), 'MetadataReplicated')
        ?.status,
      'Unknown',
    );
  });
});

describe('EtcdAvailable', () => {
  it('is True with every member healthy, True naming the one down while the quorum holds, False without it', () => {
    assert.equal(
      verdict(
        decideReplication({ serving: true, standbys: [], etcd: etcd([true, true, true]) }),
        'EtcdAvailable',
      )?.reason,
      'Healthy',
    );
    const one = verdict(
      decideReplication({ serving: true, standbys: [], etcd: etcd([true, false, true]) }),
      'EtcdAvailable',
    );
    assert.equal(one?.status, 'True');
    assert.equal(one?.reason, 'MemberDown');
    assert.match(
      one!.message,
      /2 of 3 members healthy \(down: s-etcd-1 \(connection refused\)\); the quorum holds/,
    );
    const lost = verdict(
      decideReplication({ serving: true, standbys: [], etcd: etcd([true, false, false]) }),
      'EtcdAvailable',
    );
    assert.equal(lost?.status, 'False');
    assert.equal(lost?.reason, 'QuorumLost');
  });

  it('is not decided for an etcd the operator does not run', () => {
    assert.equal(verdict(decideReplication({ serving: true, standbys: [] }), 'EtcdAvailable'), undefined);
  });
});
