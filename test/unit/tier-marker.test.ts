// The tier survey's claim (decision 45), run for real with sh against temporary directories: a tier
// this backend marked is kept, anything else is refused or, when the backend asks, emptied first.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, describe, it } from 'node:test';
import { surveyScript, tierMarkerFile } from '../../src/controllers/backend/render-tier.ts';

const root = mkdtempSync(join(tmpdir(), 'kvpool-tier-marker-'));
after(() => rmSync(root, { recursive: true, force: true }));
let n = 0;

interface Run {
  code: number | null;
  message: string;
  stderr: string;
  dir: string;
}

/** Runs the rendered survey on a fresh directory holding `files`, as backend `uid` with `policy`. */
function survey(files: Record<string, string>, uid: string, policy?: string, name = 'tier'): Run {
  n += 1;
  const dir = join(root, `${n}`, name);
  mkdirSync(dir, { recursive: true });
  for (const [file, content] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, file)), { recursive: true });
    writeFileSync(join(dir, file), content);
  }
  const log = join(root, `${n}`, 'termination-log');
  const script = surveyScript(dir).replaceAll('/dev/termination-log', log);
  const env = {
    PATH: process.env.PATH,
    KVPOOL_TIER_OWNER: uid,
    KVPOOL_TIER_BACKEND: 'ns/b',
    ...(policy ? { KVPOOL_TIER_FOREIGN_CONTENT: policy } : {}),
  };
  const r = spawnSync('sh', ['-c', script], { env, encoding: 'utf8' });
  return { code: r.status, message: existsSync(log) ? readFileSync(log, 'utf8') : '', stderr: r.stderr, dir };
}

const marker = (dir: string) => readFileSync(join(dir, tierMarkerFile), 'utf8');

describe('the tier survey and claim', () => {
  it('claims an empty directory with the backend’s UID', () => {
    const r = survey({}, 'uid-a', 'Refuse');
    assert.equal(r.code, 0);
    assert.match(r.message, /^entries=0 control=\d+ tier=new marker=none$/);
    assert.equal(marker(r.dir), 'uid=uid-a\nbackend=ns/b\n');
  });

  it('keeps its own tier after a restart: the files stay for the store to re-register', () => {
    const r = survey({ [tierMarkerFile]: 'uid=uid-a\n', '1.bucket': 'x', '1.meta': 'y' }, 'uid-a', 'Refuse');
    assert.equal(r.code, 0);
    assert.match(r.message, /^entries=2 control=\d+ tier=own marker=uid-a$/);
    assert.deepEqual(readdirSync(r.dir).sort(), [tierMarkerFile, '1.bucket', '1.meta'].sort());
  });

  it('refuses unmarked files (an earlier tier), leaving them untouched and writing no marker', () => {
    const r = survey({ '1.bucket': 'x', '1.meta': 'y' }, 'uid-a');
    assert.equal(r.code, 1, 'the Pod stops before the store reads the directory');
    assert.match(r.message, /^entries=2 control=\d+ tier=refused marker=none$/);
    assert.match(r.stderr, /holds 2 entries this backend did not write/);
    assert.deepEqual(readdirSync(r.dir).sort(), ['1.bucket', '1.meta']);
  });

  it('refuses another backend’s marked files, naming its UID', () => {
    const r = survey({ [tierMarkerFile]: 'uid=uid-b\nbackend=ns/b\n', '1.meta': 'y' }, 'uid-a', 'Refuse');
    assert.equal(r.code, 1);
    assert.match(r.message, /tier=refused marker=uid-b$/);
    assert.equal(marker(r.dir), 'uid=uid-b\nbackend=ns/b\n', 'the other backend’s marker is left as it was');
  });

  it('with Remove, empties another backend’s files (nested too) and claims the directory', () => {
    const r = survey(
      { [tierMarkerFile]: 'uid=uid-b\n', '1.bucket': 'x', 'sub/2.meta': 'y', '.hidden': 'z' },
      'uid-a',
      'Remove',
    );
    assert.equal(r.code, 0);
    assert.match(r.message, /^entries=3 control=\d+ tier=removed marker=uid-b$/);
    assert.deepEqual(readdirSync(r.dir), [tierMarkerFile]);
    assert.equal(marker(r.dir), 'uid=uid-a\nbackend=ns/b\n');
  });

  it('claims an empty directory another backend had marked: there is nothing of it to hand over', () => {
    const r = survey({ [tierMarkerFile]: 'uid=uid-b\n' }, 'uid-a', 'Refuse');
    assert.equal(r.code, 0);
    assert.match(r.message, /tier=new marker=uid-b$/);
    assert.equal(marker(r.dir), 'uid=uid-a\nbackend=ns/b\n');
  });

  it('never takes an empty UID for a match', () => {
    const r = survey({ [tierMarkerFile]: 'backend=ns/b\n', '1.meta': 'y' }, '', 'Refuse');
    assert.equal(r.code, 1);
    assert.match(r.message, /tier=refused/);
  });

  it('reports an unreadable directory as entries=-1 and leaves the verdict to the store', () => {
    const script = surveyScript(join(root, 'missing')).replaceAll(
      '/dev/termination-log',
      join(root, 'log-missing'),
    );
    const r = spawnSync('sh', ['-c', script], { env: { PATH: process.env.PATH }, encoding: 'utf8' });
    assert.equal(r.status, 0);
    assert.match(readFileSync(join(root, 'log-missing'), 'utf8'), /^entries=-1 control=\d+$/);
  });

  it('quotes a path with spaces and a single quote', () => {
    const r = survey({ '1.meta': 'y' }, 'uid-a', 'Remove', "it's a tier");
    assert.equal(r.code, 0);
    assert.deepEqual(readdirSync(r.dir), [tierMarkerFile]);
  });
});
