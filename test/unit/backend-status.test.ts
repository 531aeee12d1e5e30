// A KVCacheBackend's conditions and phase, decided from what the store and the cluster report (spec
// §2.1, §4.7). The store side comes from replies recorded on a Mooncake 0.3.13.post1 master.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { viewPod } from '../../src/controllers/backend/pod-view.ts';
import { decideBackendStatus, endpointHost } from '../../src/controllers/backend/status.ts';
import { parsePrometheusText } from '../../src/store/prometheus.ts';
import {
  conditionOf,
  crashLoopingPod,
  deploymentView,
  externalView,
  leaderPod,
  managedView,
  messageOf,
  metricsFixture,
  observation,
  twoSegments,
} from '../builders/index.ts';

describe('decideBackendStatus: leader and capacity', () => {
  it('an external store that serves with two members is Ready with 128Mi and two sorted rows', () => {
    const d = decideBackendStatus(externalView());
    assert.equal(d.phase, 'Ready');
    assert.equal(d.phaseMessage, '');
    assert.deepEqual(conditionOf(d, 'LeaderAvailable'), { status: 'True', reason: 'Serving' });
    assert.deepEqual(conditionOf(d, 'CapacityObserved'), { status: 'True', reason: 'Observed' });
    assert.deepEqual(d.capacity, { total: '128Mi', used: '12' });
    assert.deepEqual(d.members, [
      {
        segmentID: '6651381758049616625-9141558920858561675',
        clientID: '1388843159798281400-5054134275546608774',
        segmentName: '127.0.0.2:12990',
        protocol: 'tcp',
        state: 'OK',
      },
      {
        segmentID: '9099758200236697391-1121660101546635400',
        clientID: '13640518028840750378-2149290507473365130',
        segmentName: '127.0.0.3:14300',
        protocol: 'tcp',
        state: 'OK',
      },
    ]);
  });

  it('an external Admin address that does not answer is Error at once, with no capacity', () => {
    const store = observation({
      health: { ok: false, reason: 'Unreachable', message: 'connect ECONNREFUSED 10.0.0.5:9003' },
      metrics: undefined,
      segments: undefined,
    });
    const d = decideBackendStatus(externalView({ store }));
    assert.equal(d.phase, 'Error');
    assert.match(d.phaseMessage, /ECONNREFUSED/);
    assert.deepEqual(conditionOf(d, 'LeaderAvailable'), { status: 'False', reason: 'LeaderUnreachable' });
    assert.deepEqual(conditionOf(d, 'CapacityObserved'), { status: 'False', reason: 'LeaderUnreachable' });
    assert.equal(d.capacity, undefined);
  });

  it('a managed backend without a ready leader and no admin address is Provisioning', () => {
    const d = decideBackendStatus(
      managedView({ adminAddress: undefined, store: undefined, leaderPods: [leaderPod({ ready: false })] }),
    );
    assert.equal(d.phase, 'Provisioning');
    assert.deepEqual(conditionOf(d, 'LeaderAvailable'), { status: 'False', reason: 'LeaderStarting' });
    assert.equal(d.capacity, undefined);
  });

  it('a crash-looping leader Pod is Error, with the restart count in the message', () => {
    const crashing = viewPod(crashLoopingPod('kv-leader-7d9f'), 'Leader');
    for (const v of [
      managedView({ adminAddress: undefined, store: undefined, leaderPods: [crashing] }),
      managedView({
        leaderPods: [crashing],
        store: observation({ health: { ok: false, reason: 'Unreachable', message: 'refused' } }),
      }),
    ]) {
      const d = decideBackendStatus(v);
      assert.equal(d.phase, 'Error');
      assert.deepEqual(conditionOf(d, 'LeaderAvailable'), { status: 'False', reason: 'LeaderCrashLooping' });
      assert.match(d.phaseMessage, /leader Pod: container store restarted 6 times, last exit code 1/);
    }
  });

  it('a master answering service_ready: false is Provisioning, not serving', () => {
    const store = observation({ health: { ok: true, value: { serviceReady: false } } });
    const d = decideBackendStatus(managedView({ store }));
    assert.equal(d.phase, 'Provisioning');
    assert.deepEqual(conditionOf(d, 'LeaderAvailable'), { status: 'False', reason: 'ServicePlaneNotActive' });
    assert.deepEqual(conditionOf(d, 'CapacityObserved'), {
      status: 'False',
      reason: 'ServicePlaneNotActive',
    });
    assert.equal(d.capacity, undefined);
  });

  it('a failed metrics read clears capacity: ScrapeFailed', () => {
    const store = observation({ metrics: { ok: false, reason: 'ScrapeFailed', message: 'HTTP 500' } });
    const d = decideBackendStatus(externalView({ store }));
    assert.deepEqual(conditionOf(d, 'CapacityObserved'), { status: 'False', reason: 'ScrapeFailed' });
    assert.equal(d.capacity, undefined);
    assert.notEqual(d.phase, 'Ready');
  });

  it('a capacity family missing from /metrics is FamilyMissing, not zero capacity', () => {
    const text = metricsFixture('metrics-two-members-tenant.txt').replace(/^master_allocated_bytes .*$/m, '');
    const store = observation({ metrics: { ok: true, value: parsePrometheusText(text) } });
    const d = decideBackendStatus(externalView({ store }));
    assert.deepEqual(conditionOf(d, 'CapacityObserved'), { status: 'False', reason: 'FamilyMissing' });
    assert.equal(d.capacity, undefined);
  });

  it('an image that cannot be resolved is Degraded with that message', () => {
    const d = decideBackendStatus(managedView({ renderProblem: 'image "kvpool-store:" has no tag' }));
    assert.equal(d.phase, 'Degraded');
    assert.equal(d.phaseMessage, 'image "kvpool-store:" has no tag');
  });
});

describe('decideBackendStatus: children held by other objects', () => {
  it('names them in RolloutComplete=False ChildConflict and is Degraded, even before a leader Deployment exists', () => {
    const conflicts = [{ kind: 'Service', namespace: 'gpustack-system', name: 'store-leader' }];
    const d = decideBackendStatus(managedView({ conflicts, deployment: undefined }));
    assert.deepEqual(conditionOf(d, 'RolloutComplete'), { status: 'False', reason: 'ChildConflict' });
    assert.match(
      messageOf(d, 'RolloutComplete'),
      /^Service gpustack-system\/store-leader \(no controller owns it\)/,
    );
    assert.equal(d.phase, 'Degraded');
    assert.equal(d.phaseMessage, messageOf(d, 'RolloutComplete'));
  });
});

describe('decideBackendStatus: Deletable', () => {
  const usedBy = [{ kind: 'KVCachePool', namespace: '', name: 'shared-pool' }];

  it('is True when nothing uses the backend', () => {
    assert.deepEqual(conditionOf(decideBackendStatus(externalView()), 'Deletable'), {
      status: 'True',
      reason: 'NotInUse',
    });
  });

  it('is False InUse naming the consumer, without moving the phase', () => {
    const d = decideBackendStatus(externalView({ usedBy }));
    assert.deepEqual(conditionOf(d, 'Deletable'), { status: 'False', reason: 'InUse' });
    assert.match(messageOf(d, 'Deletable'), /KVCachePool\/shared-pool/);
    assert.equal(d.phase, 'Ready');
  });

  it('while deleting, the phase is Deleting and its message names the claimant', () => {
    const held = decideBackendStatus(externalView({ usedBy, deleting: true }));
    assert.equal(held.phase, 'Deleting');
    assert.match(held.phaseMessage, /used by KVCachePool\/shared-pool; delete those first/);
    const free = decideBackendStatus(managedView({ deleting: true }));
    assert.equal(free.phase, 'Deleting');
    assert.doesNotMatch(free.phaseMessage, /used by/);
  });
});

describe('decideBackendStatus: RolloutComplete and ElectionObserved never move the phase', () => {
  it('reports each rollout state', () => {
    const cases = [
      [{}, false, 'True', 'Complete'],
      [{ updated: 1 }, false, 'False', 'Progressing'],
      [{ observedGeneration: 2 }, false, 'Unknown', 'UpdateNotObserved'],
      [{}, true, 'False', 'ReplicasPending'],
    ] as const;
    for (const [over, replicasPending, status, reason] of cases) {
      const d = decideBackendStatus(managedView({ deployment: deploymentView(over), replicasPending }));
      assert.deepEqual(conditionOf(d, 'RolloutComplete'), { status, reason }, reason);
      assert.equal(d.phase, 'Ready', reason);
    }
  });

  it('reports a member rollout step, and the handover while leaders roll', () => {
    const memberRoll = {
      kind: 'wait' as const,
      message: '1 of 2 member Pods run the current template; waiting for m-a on node-a to stop',
    };
    const rolling = decideBackendStatus(managedView({ deployment: deploymentView({}), memberRoll }));
    assert.deepEqual(conditionOf(rolling, 'RolloutComplete'), { status: 'False', reason: 'MembersRolling' });
    assert.equal(messageOf(rolling, 'RolloutComplete'), memberRoll.message);
    assert.equal(rolling.phase, 'Ready');
    const both = decideBackendStatus(
      managedView({
        deployment: deploymentView({ updated: 1 }),
        memberRoll,
        handover: 'l-a leads on the outdated template',
      }),
    );
    assert.match(
      messageOf(both, 'RolloutComplete'),
      /; l-a leads on the outdated template; 1 of 2 member Pods/,
    );
    const done = decideBackendStatus(
      managedView({ deployment: deploymentView({}), memberRoll: { kind: 'done' } }),
    );
    assert.deepEqual(conditionOf(done, 'RolloutComplete'), { status: 'True', reason: 'Complete' });
  });

  it('has no rollout condition for an external store or before the Deployment exists', () => {
    assert.equal(
      conditionOf(decideBackendStatus(externalView({ deployment: deploymentView({}) })), 'RolloutComplete'),
      undefined,
    );
    assert.equal(
      conditionOf(decideBackendStatus(managedView({ deployment: undefined })), 'RolloutComplete'),
      undefined,
    );
  });

  it('reports the Lease holder', () => {
    const d = decideBackendStatus(managedView({ lease: { holder: 'kv-leader-7d9f' } }));
    assert.deepEqual(conditionOf(d, 'ElectionObserved'), { status: 'True', reason: 'Electing' });
    assert.match(messageOf(d, 'ElectionObserved'), /kv-leader-7d9f/);
  });

  it('is NoHolder when a leader replica is ready but the Lease names no holder', () => {
    const d = decideBackendStatus(managedView({ lease: {} }));
    assert.deepEqual(conditionOf(d, 'ElectionObserved'), { status: 'False', reason: 'NoHolder' });
    assert.equal(d.phase, 'Ready');
  });

  it('is Unknown before any leader is ready, and absent when election is off', () => {
    const starting = managedView({ lease: {}, leaderPods: [leaderPod({ ready: false })] });
    assert.deepEqual(conditionOf(decideBackendStatus(starting), 'ElectionObserved'), {
      status: 'Unknown',
      reason: 'LeaderStarting',
    });
    assert.equal(
      conditionOf(decideBackendStatus(managedView({ election: false })), 'ElectionObserved'),
      undefined,
    );
    assert.equal(
      conditionOf(decideBackendStatus(externalView({ election: true })), 'ElectionObserved'),
      undefined,
    );
  });
});

describe('decideBackendStatus: PoolWrites', () => {
  const idleSegments = twoSegments().map((s) => ({ ...s, usedBytes: 0 }));

  it('is True when the leader saw a put end (the two-member recording has one)', () => {
    const store = observation({ segments: { ok: true, value: { served: true, segments: idleSegments } } });
    assert.deepEqual(conditionOf(decideBackendStatus(externalView({ store })), 'PoolWrites'), {
      status: 'True',
      reason: 'WritesLanded',
    });
  });

  it('is True when a member holds data even without a counted put end', () => {
    const store = observation({
      metrics: { ok: true, value: parsePrometheusText('master_put_end_requests_total 0') },
    });
    assert.equal(conditionOf(decideBackendStatus(externalView({ store })), 'PoolWrites')?.status, 'True');
  });

  it('is Unknown NoWrites on a master that saw no put', () => {
    const store = observation({
      metrics: { ok: true, value: parsePrometheusText(metricsFixture('metrics-no-members.txt')) },
      segments: { ok: true, value: { served: true, segments: [] } },
    });
    assert.deepEqual(conditionOf(decideBackendStatus(externalView({ store })), 'PoolWrites'), {
      status: 'Unknown',
      reason: 'NoWrites',
    });
  });

  it('is False when puts started and were revoked while no member holds data', () => {
    const text =
      'master_put_start_requests_total 3\nmaster_put_revoke_requests_total 3\nmaster_put_end_requests_total 0\n';
    const store = observation({
      metrics: { ok: true, value: parsePrometheusText(text) },
      segments: { ok: true, value: { served: true, segments: idleSegments } },
    });
    assert.deepEqual(conditionOf(decideBackendStatus(externalView({ store })), 'PoolWrites'), {
      status: 'False',
      reason: 'WritesRevoked',
    });
  });
});

describe('endpointHost', () => {
  it('strips the port, IPv6-aware', () => {
    assert.equal(endpointHost('10.0.0.5:16655'), '10.0.0.5');
    assert.equal(endpointHost('[::1]:80'), '::1');
    assert.equal(endpointHost('[fd00::5]:16655'), 'fd00::5');
    assert.equal(endpointHost('node-a'), 'node-a');
    assert.equal(endpointHost(undefined), undefined);
  });
});
