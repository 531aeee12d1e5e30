// A test file whose event loop stops turning fails by itself, named, within the watchdog's limit: the
// fixture spins forever under a runner with the project's heartbeat import, and the runner's monitor (as
// run-tests starts it) ends it after 3 s of silence.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { it } from 'node:test';
import { projectRoot } from '../../images/toolchain.ts';
import { startWatchdogMonitor } from '../support/watchdog-monitor.ts';

/** This process's environment without the mark of a test file's process: the child is a runner. */
function runnerEnv(): NodeJS.ProcessEnv {
  const { NODE_TEST_CONTEXT: _context, ...env } = process.env;
  return env;
}

it('ends a file whose event loop is blocked, naming it, within the limit', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'kvpool-watchdog-'));
  const monitor = startWatchdogMonitor(dir, 3);
  try {
    const file = 'test/unit/fixtures/watchdog/blocks-its-loop.ts';
    const started = performance.now();
    const child = spawn(
      process.execPath,
      ['--test', '--test-timeout=600000', '--import=./test/support/event-loop-watchdog.ts', file],
      {
        cwd: projectRoot,
        env: { ...runnerEnv(), KVPOOL_WATCHDOG_DIR: dir },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let out = '';
    for (const s of [child.stdout, child.stderr]) s.on('data', (d) => (out += d));
    const [code] = (await once(child, 'exit')) as [number | null];
    const seconds = (performance.now() - started) / 1000;
    assert.notEqual(code, 0, `the runner reports the file failed: ${out.slice(-500)}`);
    assert.deepEqual(
      monitor.ended.map((f) => f.replace(`${projectRoot}/`, '')),
      [file],
    );
    assert.ok(seconds < 30, `ended after ${seconds.toFixed(1)} s`);
  } finally {
    monitor.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});
