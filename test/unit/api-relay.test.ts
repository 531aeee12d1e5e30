// The API relay the outage tests put between a process and the apiserver (test/support/api-relay.ts)
// leaves nothing open that would keep the test file's process from ending: a socket Node marks closing
// but never closes makes the process spin in its exit-time cleanup, where no test timeout, after hook
// or watchdog can end it. The case runs in a process of its own, so such a spin cannot hold this one.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { it } from 'node:test';
import { projectRoot } from '../../images/toolchain.ts';

it('closed in the same turn as a relayed connection ends, it closes every socket and the process ends', async () => {
  const child = spawn(process.execPath, ['test/unit/fixtures/relay/closed-as-a-connection-ends.ts'], {
    cwd: projectRoot,
    stdio: ['ignore', 'pipe', 'pipe'],
    // Only a process that spins at exit runs this long.
    timeout: 60_000,
    killSignal: 'SIGKILL',
  });
  let out = '';
  for (const stream of [child.stdout, child.stderr])
    stream.on('data', (d) => {
      out += d;
    });
  const [code, signal] = (await once(child, 'exit')) as [number | null, NodeJS.Signals | null];
  assert.equal(signal, null, `killed: the process did not end by itself\n${out}`);
  assert.equal(code, 0, out);
  assert.match(out, /every socket closed/);
});
