// Loaded into every test file's process (run-tests passes it with --import): the file's event loop
// writes a heartbeat file every second, which the runner's monitor (watchdog-monitor.ts, in another
// process) reads. A loop that stops turning (a synchronous loop in a test, or Node's exit-time cleanup
// spinning, where no test timeout, after hook or thread of this process can run) stops the heartbeat,
// and the monitor ends the file's process, naming it.
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const dir = process.env.KVPOOL_WATCHDOG_DIR;

// Only in a file's own process, and only under a runner that watches.
if (process.env.NODE_TEST_CONTEXT && dir) {
  mkdirSync(dir, { recursive: true });
  const file = join(dir, String(process.pid));
  const test = process.argv[1] ?? 'a test file';
  const beat = () => writeFileSync(file, JSON.stringify({ test, at: Date.now() }));
  beat();
  setInterval(beat, 1000).unref();
  // A process that ends normally is no longer watched; one that spins in its exit never gets here.
  process.on('exit', () => rmSync(file, { force: true }));
}
