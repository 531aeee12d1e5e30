// A doc's console blocks are found as written: only the fences of the language asked for, whole, in
// order, so a doc test runs exactly what a reader sees.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { consoleSteps, fencedBlocks, sections } from '../support/doc-blocks.ts';

describe('fencedBlocks', () => {
  it('returns the blocks of one language, in order, with every line', () => {
    const md = [
      'Intro `npm ci` inline is not a block.',
      '```console',
      'a one',
      '',
      'a two <<EOF',
      'EOF',
      '```',
      '```ts',
      'const x = 1;',
      '```',
      '```console',
      'b',
      '```',
    ].join('\n');
    assert.deepEqual(fencedBlocks(md, 'console'), ['a one\n\na two <<EOF\nEOF', 'b']);
    assert.deepEqual(fencedBlocks(md, 'ts'), ['const x = 1;']);
  });

  it('refuses a block that is never closed, rather than dropping it', () => {
    assert.throws(() => fencedBlocks('```console\nnpm start\n', 'console'), /never closed/);
  });
});

describe('sections', () => {
  it('splits a page at its ## headings, not at a ## inside a fence', () => {
    const md = [
      '# Page',
      'intro',
      '## One: a',
      'x',
      '```console',
      '## not a heading',
      '```',
      '## Two',
      'y',
    ].join('\n');
    assert.deepEqual(sections(md), [
      { heading: 'One: a', body: 'x\n```console\n## not a heading\n```\n' },
      { heading: 'Two', body: 'y\n' },
    ]);
  });
});

describe('consoleSteps', () => {
  it('takes a block without a prompt as one script', () => {
    const block = 'kubectl create namespace team-a\n# a comment\nkubectl apply -f x.yaml';
    assert.deepEqual(consoleSteps(block), [{ script: block }]);
  });

  it('takes `$ command` lines as commands, each with the output under it, continued after a trailing \\', () => {
    const block = [
      '$ kubectl get kvcp; \\',
      '  kubectl get kvcpb -A',
      'NAME  PHASE',
      'a     Ready',
      '$ kubectl get md',
      'NAME',
    ].join('\n');
    assert.deepEqual(consoleSteps(block), [
      { command: 'kubectl get kvcp; \\\n  kubectl get kvcpb -A', output: 'NAME  PHASE\na     Ready' },
      { command: 'kubectl get md', output: 'NAME' },
    ]);
  });

  it('refuses a watch, which never ends', () => {
    assert.throws(() => consoleSteps('$ kubectl get kvcb -w\nNAME'), /watches.*without -w/);
    assert.throws(() => consoleSteps('$ kubectl get kvcb --watch\nNAME'), /watches/);
    assert.deepEqual(consoleSteps('$ kubectl get kvcb -o wide\nNAME'), [
      { command: 'kubectl get kvcb -o wide', output: 'NAME' },
    ]);
  });

  it('refuses a block that mixes commands with a transcript', () => {
    assert.throws(() => consoleSteps('kubectl apply -f x.yaml\n$ kubectl get kvcb\nNAME'), /mixes/);
  });
});
