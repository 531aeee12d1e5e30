// Rollouts that keep the cache: one member Pod at a time, each after the previous replacement mounted
// its segment; one leadership handover, once the new leader replicas run or the node is cordoned.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  type LeaderPod,
  type MemberPod,
  planHandover,
  planMemberRoll,
} from '../../src/controllers/backend/rollout-plan.ts';

const member = (name: string, over: Partial<MemberPod> = {}): MemberPod => ({
  name,
  group: 0,
  hash: 'old',
  nodeName: `node-${name.at(-1)}`,
  podIP: `10.0.0.${name.charCodeAt(name.length - 1) - 96}`,
  ready: true,
  deleting: false,
  ...over,
});
const groups = [{ hash: 'new', desired: 2 }];
const everyHost = new Set(['10.0.0.1', '10.0.0.2', '10.0.0.3']);

describe('planMemberRoll', () => {
  it('is done when every member runs its group template', () => {
    const pods = [member('m-a', { hash: 'new' }), member('m-b', { hash: 'new' })];
    assert.deepEqual(planMemberRoll({ groups, pods, mountedHosts: everyHost }), { kind: 'done' });
  });

  it('recreates one outdated member, by node name, not all of them', () => {
    const plan = planMemberRoll({ groups, pods: [member('m-b'), member('m-a')], mountedHosts: everyHost });
    assert.deepEqual(plan, {
      kind: 'recreate',
      pod: 'm-a',
      message: '0 of 2 member Pods run the current template; recreating m-a on node-a',
    });
  });

  it('waits while the recreated member is stopping', () => {
    const pods = [member('m-a', { deleting: true }), member('m-b')];
    const plan = planMemberRoll({ groups, pods, mountedHosts: everyHost });
    assert.equal(plan.kind, 'wait');
    assert.match((plan as { message: string }).message, /waiting for m-a on node-a to stop$/);
  });

  it('waits until the DaemonSet has its replacement on the node', () => {
    const plan = planMemberRoll({ groups, pods: [member('m-b')], mountedHosts: everyHost });
    assert.match(
      (plan as { message: string }).message,
      /group 0 to have a member on each of its 2 nodes \(1 now\)/,
    );
  });

  it('waits until the replacement mounted its segment (Ready), then until the master lists it', () => {
    const starting = [member('m-c', { hash: 'new', nodeName: 'node-a', ready: false }), member('m-b')];
    assert.match(
      (planMemberRoll({ groups, pods: starting, mountedHosts: everyHost }) as { message: string }).message,
      /1 of 2 member Pods run the current template; waiting for the new member m-c on node-a to mount its segment$/,
    );
    const unlisted = [member('m-c', { hash: 'new', nodeName: 'node-a' }), member('m-b')];
    assert.match(
      (planMemberRoll({ groups, pods: unlisted, mountedHosts: new Set(['10.0.0.2']) }) as { message: string })
        .message,
      /m-c on node-a to be listed by the master$/,
    );
    assert.deepEqual(planMemberRoll({ groups, pods: unlisted, mountedHosts: everyHost }), {
      kind: 'recreate',
      pod: 'm-b',
      message: '1 of 2 member Pods run the current template; recreating m-b on node-b',
    });
  });

  it('relies on readiness alone while the master lists no segments', () => {
    const pods = [member('m-c', { hash: 'new', nodeName: 'node-a' }), member('m-b')];
    assert.equal(planMemberRoll({ groups, pods, mountedHosts: undefined }).kind, 'recreate');
  });

  it('rolls one Pod across all groups, group by group', () => {
    const two = [
      { hash: 'new', desired: 1 },
      { hash: 'new1', desired: 1 },
    ];
    const pods = [member('m-b', { group: 1, hash: 'old1' }), member('m-a', { hash: 'new' })];
    assert.deepEqual(planMemberRoll({ groups: two, pods, mountedHosts: everyHost }), {
      kind: 'recreate',
      pod: 'm-b',
      message: '1 of 2 member Pods run the current template; recreating m-b on node-b',
    });
  });
});

const leader = (name: string, over: Partial<LeaderPod> = {}): LeaderPod => ({
  name,
  hash: 'new',
  podIP: `10.1.0.${name.charCodeAt(name.length - 1) - 96}`,
  nodeName: `node-${name.at(-1)}`,
  running: true,
  deleting: false,
  nodeCordoned: false,
  ...over,
});

describe('planHandover', () => {
  const holder = '10.1.0.1:50051';
  const plan = (pods: LeaderPod[], stepDown: string[] = [], h: string | undefined = holder) =>
    planHandover({ hash: 'new', pods, holder: h, stepDown });

  it('asks nothing while the leader runs the current template on a schedulable node', () => {
    assert.deepEqual(plan([leader('l-a'), leader('l-b')]), { stepDown: [] });
  });

  it('keeps an outdated leader while a new replica is still starting', () => {
    const p = plan([leader('l-a', { hash: 'old' }), leader('l-b'), leader('l-c', { running: false })]);
    assert.deepEqual(p.stepDown, []);
    assert.match(
      p.message!,
      /l-a leads on the outdated template until the new replicas run \(1 running, 1 starting\)/,
    );
  });

  it('asks the outdated leader to step down once every scheduled new replica runs', () => {
    const pods = [
      leader('l-a', { hash: 'old' }),
      leader('l-b'),
      leader('l-c', { running: false, nodeName: undefined }),
    ];
    assert.deepEqual(plan(pods), {
      stepDown: ['l-a'],
      message: 'handing leadership over from l-a (outdated template)',
    });
  });

  it('keeps the old master, and every key, until the members have rolled', () => {
    const pods = [leader('l-a', { hash: 'old' }), leader('l-b')];
    const held = planHandover({ hash: 'new', pods, holder, stepDown: [], membersRolling: true });
    assert.deepEqual(held, {
      stepDown: [],
      message: 'l-a leads on the outdated template until the members have rolled',
    });
    const cordoned = [leader('l-a', { nodeCordoned: true }), leader('l-b')];
    const drain = planHandover({ hash: 'new', pods: cordoned, holder, stepDown: [], membersRolling: true });
    assert.deepEqual(drain.stepDown, ['l-a'], 'a drain does not wait for a member roll');
  });

  it('names every outdated Pod, so none of them wins the handover', () => {
    const pods = [leader('l-a', { hash: 'old' }), leader('l-b', { hash: 'old' }), leader('l-c')];
    assert.deepEqual(plan(pods).stepDown, ['l-a', 'l-b']);
  });

  it('never hands over to an outdated standby alone', () => {
    assert.deepEqual(plan([leader('l-a', { hash: 'old' }), leader('l-b', { hash: 'old' })]).stepDown, []);
  });

  it('keeps naming the Pods that stepped down until they are gone, then asks nothing', () => {
    const pods = [leader('l-a', { hash: 'old' }), leader('l-b')];
    const after = plan(pods, ['l-a'], '10.1.0.2:50051');
    assert.deepEqual(after.stepDown, ['l-a']);
    assert.deepEqual(plan([leader('l-b')], ['l-a'], '10.1.0.2:50051'), { stepDown: [] });
    const going = plan(
      [leader('l-a', { hash: 'old', deleting: true }), leader('l-b')],
      ['l-a'],
      '10.1.0.2:50051',
    );
    assert.deepEqual(going, { stepDown: [] });
  });

  it('lets a Pod back into the election when a rollback makes its template current again', () => {
    assert.deepEqual(plan([leader('l-a'), leader('l-b')], ['l-a'], '10.1.0.2:50051'), { stepDown: [] });
  });

  it('hands over from a cordoned node to a running standby elsewhere, naming the standbys there too', () => {
    const pods = [
      leader('l-a', { nodeCordoned: true }),
      leader('l-c', { nodeCordoned: true }),
      leader('l-b'),
    ];
    assert.deepEqual(plan(pods), {
      stepDown: ['l-a', 'l-c'],
      message: 'handing leadership over from l-a (its node is cordoned)',
    });
    const alone = plan([leader('l-a', { nodeCordoned: true }), leader('l-b', { nodeCordoned: true })]);
    assert.deepEqual(alone.stepDown, []);
    assert.match(alone.message!, /no running standby on another node/);
  });

  it('asks nothing when no Pod holds the Lease', () => {
    const pods = [leader('l-a', { hash: 'old' })];
    assert.deepEqual(planHandover({ hash: 'new', pods, holder: undefined, stepDown: [] }), { stepDown: [] });
  });
});
