// Loaded into every test file's process (run-tests passes it with --import). A file whose tests are
// done but which some handle keeps alive (once one spun for over 12 minutes in Node's exit-time
// cleanup) is ended a while after its last test, once its results have reached the runner.
// --test-force-exit would end it at once, but it drops the tail of a file's results before the
// runner reads them: counts come out short and a failing test is reported as its file, without its
// error. This waits instead of dropping them.
import { after } from 'node:test';

/**
 * This hook runs before a file's own top-level after() hooks (it is registered first), so the grace
 * covers them (a store or a cluster stopping), and the results' writing; short against the run.
 */
const graceMs = 120_000;

// Only in a file's own process: the runner that spawns them also loads this module.
if (process.env.NODE_TEST_CONTEXT) {
  after(() => {
    setTimeout(() => {
      console.error(`${process.argv[1]}: still running ${graceMs / 1000} s after its last test; ending it`);
      process.exit();
    }, graceMs).unref();
  });
}
