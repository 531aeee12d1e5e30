// Member groups have no names, so a position is a group's identity: moves and tier changes on a kept
// position are refused with both positions named; appends, last-group removals and edits are admitted.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { MemberGroup } from '../../src/api/kvcache-backend.ts';
import { diskTierRefusals, positionRefusal } from '../../src/webhooks/backend-rules-positions.ts';

const group = (zone: string, extra: Partial<MemberGroup> = {}): MemberGroup => ({
  nodeSelector: { zone },
  medium: 'DRAM',
  capacityPerMember: '8Gi',
  ...extra,
});
const tiered = (zone: string, path: string) => group(zone, { localDisks: [{ path }] });

function includesAll(message: string | undefined, ...fragments: string[]): void {
  assert.ok(message, 'expected a refusal');
  for (const fragment of fragments) assert.ok(message.includes(fragment), `${message} lacks "${fragment}"`);
}

describe('positionRefusal', () => {
  const [A, B, C] = [group('a'), group('b'), group('c')];

  it('refuses a swap, naming both positions', () => {
    includesAll(
      positionRefusal([A, B], [B, A]),
      'spec.connection.managed.members[0]: the groups at members[0] and members[1] changed places',
      'restore the previous order',
    );
  });

  it('refuses removing a group that is not the last', () => {
    includesAll(
      positionRefusal([A, B, C], [A, C]),
      'spec.connection.managed.members[1]: the group that was at members[2] now sits at members[1]',
      'remove only the last group',
    );
    includesAll(positionRefusal([A, B, C], [B, C]), 'was at members[1] now sits at members[0]');
    includesAll(positionRefusal([A, A, B], [A, B]), 'was at members[2] now sits at members[1]');
  });

  it('admits appending, removing the last group and in-place edits', () => {
    assert.equal(positionRefusal([A, B], [A, B, C]), undefined);
    assert.equal(positionRefusal([A, B, C], [A, B]), undefined);
    assert.equal(positionRefusal([A, B], [A, group('b', { capacityPerMember: '16Gi' })]), undefined);
    assert.equal(
      positionRefusal([A, B], [A, group('b', { image: 'store:2', extraArgs: ['-x=1'] })]),
      undefined,
    );
  });

  it('admits what the heuristic cannot tell from an edit', () => {
    // A later identical group fills the gap, and a reorder that also edits both groups.
    assert.equal(positionRefusal([A, B, C], [A, C, C]), undefined);
    assert.equal(
      positionRefusal(
        [A, B],
        [group('b', { capacityPerMember: '16Gi' }), group('a', { capacityPerMember: '16Gi' })],
      ),
      undefined,
    );
  });

  it('matches nodeSelectors by content, not key order', () => {
    const ab = group('x', { nodeSelector: { a: '1', b: '2' } });
    const ba = group('x', { nodeSelector: { b: '2', a: '1' } });
    assert.equal(positionRefusal([ab, B], [ba, B]), undefined);
  });
});

describe('diskTierRefusals', () => {
  const A = group('a');
  const T = tiered('t', '/var/lib/kvcache');

  it('refuses adding a tier to an existing position', () => {
    const errors = diskTierRefusals([A], [tiered('a', '/var/lib/kvcache')]);
    assert.equal(errors.length, 1);
    includesAll(
      errors[0],
      'spec.connection.managed.members[0].localDisks: a disk tier cannot be added',
      'declare the tier on a new backend',
    );
  });

  it('refuses removing the tier of a position that stays', () => {
    const errors = diskTierRefusals([T, A], [group('t'), A]);
    assert.equal(errors.length, 1);
    includesAll(
      errors[0],
      'members[0].localDisks: the disk tier at /var/lib/kvcache cannot be removed',
      'new backend',
    );
  });

  it('refuses re-pathing a tier', () => {
    const errors = diskTierRefusals([T], [tiered('t', '/data/kv')]);
    assert.equal(errors.length, 1);
    includesAll(
      errors[0],
      'members[0].localDisks[0].path: a disk tier cannot move from /var/lib/kvcache to /data/kv',
      'declare the tier at /data/kv on a new backend',
    );
  });

  it('hints at reordering when the same path appears at another position', () => {
    const errors = diskTierRefusals([T, A], [A, T]);
    assert.equal(errors.length, 2, JSON.stringify(errors));
    includesAll(errors[0], 'members[0].localDisks', 'now sits at members[1]: groups cannot be reordered');
    includesAll(errors[1], 'members[1].localDisks', 'was declared at members[0]');
  });

  it('admits removing the last group with its tier, appending one, and an unchanged tier', () => {
    assert.deepEqual(diskTierRefusals([A, T], [A]), []);
    assert.deepEqual(diskTierRefusals([A], [A, T]), []);
    assert.deepEqual(diskTierRefusals([T], [tiered('other-zone', '/var/lib/kvcache')]), []);
  });
});
