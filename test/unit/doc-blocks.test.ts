// A doc's console blocks are found as written: only the fences of the language asked for, whole, in
// order, so a doc test runs exactly what a reader sees.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { fencedBlocks } from '../support/doc-blocks.ts';

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
