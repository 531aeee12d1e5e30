// A token file is read again once the cached token is older than its age limit, or at once after the
// API server refused it (invalidate), and never served empty.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { TokenFile } from '../../src/kube/token-file.ts';
import { ManualClock } from '../support/manual-clock.ts';

const dir = mkdtempSync(join(tmpdir(), 'kvpool-token-'));
after(() => rmSync(dir, { recursive: true, force: true }));

test('a rotated token is read once the cached one is older than the limit', async () => {
  const path = join(dir, 'rotated');
  writeFileSync(path, 'first\n');
  const clock = new ManualClock();
  const token = new TokenFile(path, 50, clock);
  assert.equal(await token.current(), 'first');
  writeFileSync(path, 'second');
  clock.advance(50);
  assert.equal(await token.current(), 'first', 'cached up to the limit');
  clock.advance(1);
  assert.equal(await token.current(), 'second', 'read again past the limit');
  writeFileSync(path, 'third');
  clock.advance(50);
  assert.equal(await token.current(), 'second', 'the age counts from the last read');
});

test('invalidate reads the file on the next request', async () => {
  const path = join(dir, 'refused');
  writeFileSync(path, 'old');
  const token = new TokenFile(path);
  assert.equal(await token.current(), 'old');
  writeFileSync(path, 'new');
  token.invalidate();
  assert.equal(await token.current(), 'new');
});

test('an empty or missing file is an error naming the file, and is read again next time', async () => {
  const path = join(dir, 'empty');
  writeFileSync(path, '');
  const token = new TokenFile(path);
  await assert.rejects(token.current(), new RegExp(`the token file ${path} is empty`));
  writeFileSync(path, 'now');
  assert.equal(await token.current(), 'now');
});
