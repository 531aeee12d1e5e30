// A doc's transcript holds against what a later run prints when only what varies varies (ages, Pod
// name suffixes, IPs, usage other than 0, table padding, `…`), and fails on drift anywhere else.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { outputDifference } from '../support/doc-output.ts';

const bindings = `NAMESPACE   NAME       POOL          DOMAIN        EFFECTIVE   USAGE   PHASE   AGE
team-a      qwen-fp8   shared-dram   qwen-fp8-v1   3.2Gi       0       Ready   40s
team-a      team-a     shared-dram   default       6.4Gi       384Ki   Ready   5m
team-b      team-b     shared-dram   llama-8b-v1   6.4Gi       0       Ready   40s`;

const tree = `KVCacheBackend mooncake-dram  Ready  capacity 16Gi (384Ki used)
│  leader: elected 100.64.1.4:50051, Pod mooncake-dram-leader-6557fd9645-ksvxt on kvpool-node-…; 3 replicas, 1 ready
├─ members: 2 nodes
│  ├─ kvpool-node-1  mooncake-dram-member-0-kkqfn ready  segment OK
│  └─ kvpool-node-2  mooncake-dram-member-0-r8xml ready  segment OK
└─ KVCachePool shared-dram  Ready  quota 16Gi  usage 384Ki
   ├─ KVCachePoolBinding team-a/qwen-fp8  Ready  domain qwen-fp8-v1
   │  │  [▒▒▒▒▒▒▒▒▒▒▒▒▒▒▒▒▒▒▒░░░░░] usage 0 · grant 3.2Gi · ceiling 4Gi
   │  └─ ModelDeployment team-a/qwen-chat-fp8  Ready  vLLM  1S  CacheAttached=Unknown (NoObservationAvailable)
   └─ KVCachePoolBinding team-a/team-a  Ready  domain default
         [█▒▒▒▒▒▒▒▒▒▒▒▒▒▒▒▒▒▒░░░░░] usage 384Ki · grant 6.4Gi · ceiling 8Gi

Bars: █ usage  ▒ granted  ░ ceiling the store does not grant`;

/** `text` with one exact piece replaced, failing the test if the piece is not there. */
function edit(text: string, from: string, to: string): string {
  assert.ok(text.includes(from), `the golden has ${from}`);
  return text.replace(from, to);
}

describe('outputDifference', () => {
  it('admits the same output', () => {
    assert.equal(outputDifference(bindings, bindings), undefined);
    assert.equal(outputDifference(tree, tree.replace('kvpool-node-…', 'kvpool-node-1')), undefined);
  });

  it('admits other ages, other non-zero usage and the padding that comes with them', () => {
    const later = `NAMESPACE   NAME       POOL          DOMAIN        EFFECTIVE   USAGE    PHASE   AGE
team-a      qwen-fp8   shared-dram   qwen-fp8-v1   3.2Gi       0        Ready   2m10s
team-a      team-a     shared-dram   default       6.4Gi       1152Ki   Ready   7m
team-b      team-b     shared-dram   llama-8b-v1   6.4Gi       0        Ready   2m10s
`;
    assert.equal(outputDifference(bindings, later), undefined);
  });

  it('admits other Pod IPs, Pod name suffixes, leader nodes, usage figures and bars with more usage', () => {
    let later = edit(tree, '100.64.1.4', '100.64.2.17');
    later = edit(later, '6557fd9645-ksvxt', '7d9c8b5f4-x2q9z');
    later = edit(later, 'kvpool-node-…', 'kvpool-node-2');
    later = edit(later, 'member-0-kkqfn', 'member-0-b7w4p');
    later = edit(later, '(384Ki used)', '(2.1Mi used)');
    later = edit(later, 'usage 384Ki\n', 'usage 2.1Mi\n');
    later = edit(later, '[█▒▒▒▒▒▒▒▒▒▒▒▒▒▒▒▒▒▒░░░░░] usage 384Ki', '[███▒▒▒▒▒▒▒▒▒▒▒▒▒▒▒▒░░░░░] usage 2.1Mi');
    assert.equal(outputDifference(tree, later), undefined);
  });

  it('admits anything where the doc writes …', () => {
    const doc = '{…,"reason":"CacheActive","status":"True","type":"CacheAttached"}';
    const printed =
      '{"lastTransitionTime":"2026-12-02T14:00:00Z","message":"2 replicas use the store","observedGeneration":1,"reason":"CacheActive","status":"True","type":"CacheAttached"}';
    assert.equal(outputDifference(doc, printed), undefined);
    assert.match(
      outputDifference(doc, printed.replace('CacheActive', 'NoObservationAvailable')) ?? '',
      /line 1/,
    );
  });

  const drifts: [string, string, string][] = [
    ['a column header', 'EFFECTIVE', 'GRANT    '],
    ['an effective grant', 'default       6.4Gi', 'default       8Gi  '],
    ['a phase', '384Ki   Ready', '384Ki   Error'],
    ['a name', 'team-b      team-b ', 'team-b      team-c '],
    ['a usage of 0 become some', 'qwen-fp8-v1   3.2Gi       0  ', 'qwen-fp8-v1   3.2Gi       4Ki'],
    ['a missing figure', 'default       6.4Gi       384Ki', 'default       6.4Gi       <none>'],
    ['an age that is no age', '40s\nteam-a', 'soon\nteam-a'],
  ];
  for (const [what, from, to] of drifts)
    it(`fails on ${what} in a table, naming the line`, () => {
      const diff = outputDifference(bindings, edit(bindings, from, to));
      assert.ok(diff, `${what} passed`);
      assert.match(diff, /^line \d of 4: the doc has\n {2}\S.*\nthe command printed\n {2}\S/);
    });

  it('fails on a row more or less', () => {
    assert.match(
      outputDifference(bindings, bindings.split('\n').slice(0, 3).join('\n')) ?? '',
      /line 4 of 4/,
    );
    assert.match(
      outputDifference(bindings, `${bindings}\nteam-c  x  y  z  1Gi  0  Ready  1s`) ?? '',
      /line 5/,
    );
  });

  const treeDrifts: [string, string, string][] = [
    ['a capacity', 'capacity 16Gi', 'capacity 8Gi'],
    ['a grant', 'grant 3.2Gi', 'grant 4Gi'],
    ['a condition reason', 'Unknown (NoObservationAvailable)', 'False (NoObservationAvailable)'],
    ['a leader count', '3 replicas, 1 ready', '3 replicas, 2 ready'],
    ['a port', ':50051', ':50052'],
    ['the tree', '│  └─ kvpool-node-2', '└─ kvpool-node-2'],
    ['the indentation', '   └─ KVCachePoolBinding team-a/team-a', '  └─ KVCachePoolBinding team-a/team-a'],
    ['a word', 'segment OK', 'segment missing'],
    ['a usage of 0 become some', 'usage 0 ·', 'usage 4Ki ·'],
    ['a bar with another grant', '[▒▒▒▒▒▒▒▒▒▒▒▒▒▒▒▒▒▒▒░░░░░]', '[▒▒▒▒▒▒▒▒▒▒▒▒▒▒▒▒▒▒▒▒░░░░]'],
    ['a bar with usage where the doc has none', '[▒▒▒▒▒▒▒▒▒▒▒▒▒▒▒▒▒▒▒░░░░░]', '[█▒▒▒▒▒▒▒▒▒▒▒▒▒▒▒▒▒▒░░░░░]'],
    ['a Pod of another workload', 'mooncake-dram-member-0-r8xml', 'mooncake-disk-member-0-r8xml'],
  ];
  for (const [what, from, to] of treeDrifts)
    it(`fails on ${what} in the status tree`, () => {
      assert.ok(outputDifference(tree, edit(tree, from, to)), `${what} passed`);
    });
});
