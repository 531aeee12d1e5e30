// Which directories may hold a disk tier, how a path is spelled canonically, and that the CEL rules the
// CRD carries name the same directories as the check the tier cleanup repeats.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  canonicalTierPath,
  systemDirectories,
  systemTrees,
  tierPathProblem,
  tierPathRules,
} from '../../src/api/tier-path.ts';

describe('canonicalTierPath', () => {
  it('drops empty and . components and a trailing /', () => {
    assert.equal(canonicalTierPath('/data//kvcache'), '/data/kvcache');
    assert.equal(canonicalTierPath('/data/./kvcache/'), '/data/kvcache');
    assert.equal(canonicalTierPath('//data/kvcache/.'), '/data/kvcache');
    assert.equal(canonicalTierPath('/'), '/');
    assert.equal(canonicalTierPath('/data/kvcache'), '/data/kvcache');
  });
});

describe('tierPathProblem', () => {
  it('refuses the system directories themselves, however spelled', () => {
    for (const path of ['/', '//', '/etc', '/var/lib', '/var/lib/', '/var//lib', '/home', '/tmp', '/opt'])
      assert.match(tierPathProblem(path) ?? '', /system directory|sit inside/, path);
    assert.match(tierPathProblem('/var/./lib/') ?? '', /system directory \(\/var\/lib\)/);
  });

  it('refuses anything inside the system, runtime and agent trees, naming the tree', () => {
    for (const [path, tree] of [
      ['/usr/local/kvcache', '/usr'],
      ['/proc/kvcache', '/proc'],
      ['/lib64', '/lib64'],
      ['/libx32/kvcache', '/libx32'],
      ['/run/kvcache', '/run'],
      ['/var/lib/kubelet/pods', '/var/lib/kubelet'],
      ['/etc//kvcache', '/etc'],
    ] as const)
      assert.match(tierPathProblem(path) ?? '', new RegExp(`inside ${tree} `), path);
  });

  it('accepts a directory of its own, siblings of system trees with a common prefix included', () => {
    for (const path of [
      '/var/lib/kvcache',
      '/data/kvcache',
      '/opt/kvcache',
      '/tmp/kvcache',
      '/home/kv',
      '/library/kv',
      '/var/lib/kubelet2',
      '/usrdata',
    ])
      assert.equal(tierPathProblem(path), undefined, path);
  });

  it('names the fix: a directory of its own, by example', () => {
    assert.match(
      tierPathProblem('/etc') ?? '',
      /use a directory of its own, for example \/var\/lib\/kvcache/,
    );
  });
});

describe('the CEL rules of the tier path', () => {
  const rules = tierPathRules();

  it('list every system directory but / (which the absolute-path rule refuses) and every tree', () => {
    const [, directories, trees] = rules;
    for (const d of systemDirectories.filter((d) => d !== '/'))
      assert.ok(directories!.rule.includes(`'${d}'`), d);
    for (const t of systemTrees) assert.ok(trees!.rule.includes(t), t);
  });

  it('carry a message the API reference can show and one that names the canonical spelling', () => {
    for (const r of rules) {
      assert.match(r.message ?? '', /^localDisks\[\]\.path must /);
      assert.ok(r.messageExpression, r.rule);
    }
    assert.match(rules[0]!.messageExpression!, /write it as ' \+ \(self \+ '\/'\)\.replace/);
  });
});
