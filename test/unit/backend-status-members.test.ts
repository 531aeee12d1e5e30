// A KVCacheBackend's members: segments the leader lists joined to member Pods, the shortfall, stuck
// member Pods (spec §2.1 MembersMounted, §4.7 step 3), and what a Pod object says about itself.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { viewPod } from '../../src/controllers/backend/pod-view.ts';
import { decideBackendStatus } from '../../src/controllers/backend/status.ts';
import { parsePrometheusText } from '../../src/store/prometheus.ts';
import {
  conditionOf,
  containerStatus,
  crashLoopingPod,
  managedView,
  memberPod,
  membersAtRecordedIps,
  messageOf,
  metricsFixture,
  nodeNotReporting,
  observation,
  readyNode,
  storePod,
  waitingPod,
} from '../builders/index.ts';

describe('decideBackendStatus: MembersMounted', () => {
  it('joins member Pods to their segments: rows carry node name and medium', () => {
    const d = decideBackendStatus(managedView());
    assert.equal(d.phase, 'Ready');
    assert.deepEqual(conditionOf(d, 'MembersMounted'), { status: 'True', reason: 'Mounted' });
    assert.equal(messageOf(d, 'MembersMounted'), 'leader lists 2 segment(s)');
    assert.deepEqual(d.capacity, { total: '128Mi', used: '12' });
    assert.deepEqual(
      d.members?.map((m) => [m.segmentName, m.nodeName, m.medium, m.protocol, m.state]),
      [
        ['127.0.0.2:12990', 'n1', 'DRAM', 'tcp', 'OK'],
        ['127.0.0.3:14300', 'n2', 'DRAM', 'tcp', 'OK'],
      ],
    );
  });

  it('sorts rows the same whatever order the leader lists them in', () => {
    const reversed = observation();
    if (reversed.segments?.ok && reversed.segments.value.served) reversed.segments.value.segments.reverse();
    assert.deepEqual(
      decideBackendStatus(managedView({ store: reversed })).members,
      decideBackendStatus(managedView()).members,
    );
  });

  it('a ready member Pod whose address the leader does not list is SegmentsShort, named', () => {
    const memberPods = [...membersAtRecordedIps(), memberPod('kv-member-0-c', '127.0.0.4', 'n3')];
    const d = decideBackendStatus(managedView({ memberPods }));
    assert.equal(d.phase, 'Degraded');
    assert.deepEqual(conditionOf(d, 'MembersMounted'), { status: 'False', reason: 'SegmentsShort' });
    assert.match(d.phaseMessage, /kv-member-0-c on n3/);
    assert.doesNotMatch(d.phaseMessage, /kv-member-0-a|kv-member-0-b/);
  });

  it('a member Pod that is not ready yet, or is going away, is not a shortfall', () => {
    const memberPods = [
      ...membersAtRecordedIps(),
      { ...viewPod(waitingPod('kv-member-0-c', 'ContainerCreating'), 'Member'), group: 0 },
      memberPod('kv-member-0-d', '127.0.0.5', 'n4', { deleting: true }),
    ];
    const d = decideBackendStatus(managedView({ memberPods }));
    assert.equal(d.phase, 'Ready');
    assert.deepEqual(conditionOf(d, 'MembersMounted'), { status: 'True', reason: 'Mounted' });
  });

  it('a stuck member Pod is Degraded with its own reason', () => {
    const pulling = viewPod(
      waitingPod('kv-member-0-c', 'ImagePullBackOff', 'Back-off pulling image "x"'),
      'Member',
    );
    const memberPods = [...membersAtRecordedIps(), { ...pulling, group: 0 }];
    const d = decideBackendStatus(managedView({ memberPods }));
    assert.equal(d.phase, 'Degraded');
    assert.deepEqual(conditionOf(d, 'MembersMounted'), { status: 'False', reason: 'ImagePullBackOff' });
    assert.match(d.phaseMessage, /member Pod kv-member-0-c on n1: Back-off pulling image "x"/);
  });

  it('a member Pod on a node that stopped reporting is Degraded, naming the node, while the leader still lists its segment', () => {
    // A node that died: the node controller marks it Unknown and the Pod not ready; the Pod's last
    // container statuses still say running, and the master lists the segment until its client TTL ends.
    const dead = storePod('kv-member-0-b', {
      phase: 'Running',
      podIP: '127.0.0.3',
      conditions: [{ type: 'Ready', status: 'False' }],
      containerStatuses: [containerStatus({ name: 'store', state: { running: {} } })],
    });
    dead.spec!.nodeName = 'n2';
    const memberPods = [
      memberPod('kv-member-0-a', '127.0.0.2', 'n1'),
      { ...viewPod(dead, 'Member', nodeNotReporting('n2')), group: 0 },
    ];
    const d = decideBackendStatus(managedView({ memberPods }));
    assert.equal(d.phase, 'Degraded');
    assert.deepEqual(conditionOf(d, 'MembersMounted'), { status: 'False', reason: 'NodeStatusUnknown' });
    assert.match(
      d.phaseMessage,
      /member Pod kv-member-0-b on n2: node n2 is not Ready \(Unknown, NodeStatusUnknown: Kubelet stopped posting node status\.\)/,
    );
  });

  it('a crash-looping member Pod is MemberCrashLooping', () => {
    const crashing = { ...viewPod(crashLoopingPod('kv-member-0-c'), 'Member'), group: 0 };
    const d = decideBackendStatus(managedView({ memberPods: [...membersAtRecordedIps(), crashing] }));
    assert.deepEqual(conditionOf(d, 'MembersMounted'), { status: 'False', reason: 'MemberCrashLooping' });
    assert.equal(d.phase, 'Degraded');
  });

  it('a leader listing no segment is NoSegments', () => {
    const store = observation({
      metrics: { ok: true, value: parsePrometheusText(metricsFixture('metrics-no-members.txt')) },
      segments: { ok: true, value: { served: true, segments: [] } },
    });
    const d = decideBackendStatus(managedView({ store, memberPods: [] }));
    assert.equal(d.phase, 'Degraded');
    assert.deepEqual(conditionOf(d, 'MembersMounted'), { status: 'False', reason: 'NoSegments' });
    assert.deepEqual(d.capacity, { total: '0', used: '0' });
    assert.deepEqual(d.members, []);
  });

  it('a master without the listing route is Unknown and still Ready when capacity is positive', () => {
    const store = observation({ segments: { ok: true, value: { served: false } } });
    const d = decideBackendStatus(managedView({ store }));
    assert.deepEqual(conditionOf(d, 'MembersMounted'), {
      status: 'Unknown',
      reason: 'SegmentListingNotServed',
    });
    assert.deepEqual(d.members, []);
    assert.equal(d.phase, 'Ready');
  });

  it('two member Pods sharing one address are AmbiguousMemberIdentity; their segment joins neither', () => {
    const memberPods = [
      ...membersAtRecordedIps(),
      memberPod('kv-member-1-a', '127.0.0.2', 'n5', { group: 1 }),
    ];
    const d = decideBackendStatus(managedView({ memberPods, groupMedium: ['DRAM', 'NVMe'] }));
    assert.equal(d.phase, 'Degraded');
    assert.deepEqual(conditionOf(d, 'MembersMounted'), {
      status: 'False',
      reason: 'AmbiguousMemberIdentity',
    });
    assert.match(messageOf(d, 'MembersMounted'), /127\.0\.0\.2:16966: kv-member-0-a, kv-member-1-a/);
    const shared = d.members?.find((m) => m.segmentName === '127.0.0.2:12990');
    assert.equal(shared?.nodeName, undefined);
    assert.equal(shared?.medium, undefined);
  });

  it('a failed listing keeps the previous rows', () => {
    const previousMembers = [{ segmentID: 'old', nodeName: 'n1' }];
    const store = observation({ segments: { ok: false, reason: 'ListingTooLarge', message: 'too many' } });
    const d = decideBackendStatus(managedView({ store, previousMembers }));
    assert.deepEqual(conditionOf(d, 'MembersMounted'), { status: 'False', reason: 'ListingTooLarge' });
    assert.deepEqual(d.members, previousMembers);
    assert.equal(d.phase, 'Degraded');
  });
});

const ready = [
  { type: 'PodScheduled', status: 'True' },
  { type: 'Ready', status: 'True' },
];
const unschedulable = [
  {
    type: 'PodScheduled',
    status: 'False',
    reason: 'Unschedulable',
    message: '0/3 nodes are available: 3 Insufficient memory.',
  },
];

describe('viewPod', () => {
  it('a ready Pod has no fault, whatever its restart history', () => {
    const p = storePod('kv-member-0-a', {
      phase: 'Running',
      conditions: ready,
      containerStatuses: [containerStatus({ name: 'store', restartCount: 3 })],
    });
    assert.deepEqual(viewPod(p, 'Member'), {
      name: 'kv-member-0-a',
      ready: true,
      podIP: '10.0.0.20',
      nodeName: 'n1',
      deleting: false,
    });
  });

  it('an unschedulable Pod says so, with the scheduler’s message, per role', () => {
    const p = storePod('kv-member-0-a', { phase: 'Pending', conditions: unschedulable });
    assert.deepEqual(viewPod(p, 'Member').fault, {
      reason: 'Unschedulable',
      message: '0/3 nodes are available: 3 Insufficient memory.',
    });
    assert.equal(viewPod(p, 'Leader').fault?.reason, 'LeaderUnschedulable');
  });

  it('an init container crash loop is MemberInitCrashLooping with restarts and last exit code', () => {
    const p = storePod('kv-member-0-a', {
      phase: 'Pending',
      conditions: [{ type: 'Ready', status: 'False' }],
      initContainerStatuses: [
        containerStatus({
          name: 'disk-survey',
          restartCount: 4,
          state: { waiting: { reason: 'CrashLoopBackOff' } },
          lastState: { terminated: { exitCode: 2, message: 'tier path is not a directory' } },
        }),
      ],
      containerStatuses: [
        containerStatus({ name: 'store', state: { waiting: { reason: 'PodInitializing' } } }),
      ],
    });
    const fault = viewPod(p, 'Member').fault;
    assert.equal(fault?.reason, 'MemberInitCrashLooping');
    assert.match(
      fault?.message ?? '',
      /disk-survey restarted 4 times, last exit code 2: tier path is not a directory/,
    );
  });

  it('waiting for a container to be created or initialised is progress, not a fault', () => {
    assert.equal(viewPod(waitingPod('a', 'ContainerCreating'), 'Member').fault, undefined);
    assert.equal(viewPod(waitingPod('a', 'PodInitializing'), 'Member').fault, undefined);
  });

  it('a Pod not ready on a node that is not Ready has the node for its fault; on a Ready node it has none', () => {
    const p = storePod('kv-member-0-a', {
      phase: 'Running',
      conditions: [{ type: 'Ready', status: 'False' }],
      containerStatuses: [containerStatus({ name: 'store', state: { running: {} } })],
    });
    assert.deepEqual(viewPod(p, 'Member', nodeNotReporting('n1')).fault, {
      reason: 'NodeStatusUnknown',
      message:
        'node n1 is not Ready (Unknown, NodeStatusUnknown: Kubelet stopped posting node status.): the member’s objects are lost, and the leader lists its segment until its client TTL ends',
    });
    assert.equal(viewPod(p, 'Member', readyNode('n1')).fault, undefined);
    assert.equal(viewPod(p, 'Member').fault, undefined);
    const served = storePod('kv-member-0-a', { phase: 'Running', conditions: ready });
    assert.equal(viewPod(served, 'Member', nodeNotReporting('n1')).fault, undefined);
  });

  it('passes other kubelet waiting reasons through, and notes a Pod going away', () => {
    assert.deepEqual(viewPod(waitingPod('a', 'ErrImagePull', 'not found'), 'Leader').fault, {
      reason: 'ErrImagePull',
      message: 'not found',
    });
    const going = storePod('a', { conditions: ready }, { deletionTimestamp: '2025-01-01T00:00:00Z' });
    assert.equal(viewPod(going, 'Member').deleting, true);
  });
});
