// Runs the test suites on node's built-in runner (which prints its totals), with one shared control
// plane for the integration tests, then checks that no process the run started is still alive and
// that no local cluster left devices, namespaces or Pods behind.
// Usage: node scripts/run-tests.ts [file or glob ...]   (default: every suite)
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { globSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cacheDir } from '../images/toolchain.ts';
import { abandonedTraces, sweepAbandoned } from '../local/nodes/host-network.ts';
import { startWatchdogMonitor } from '../test/support/watchdog-monitor.ts';

const suites = ['test/unit/**/*.test.ts', 'test/integration/**/*.test.ts', 'test/e2e/**/*.test.ts'];
/**
 * Files that run after the rest, one at a time, each alone: real engines take the machine's cores for
 * minutes, and the other end-to-end tests' timing (Lease renewals, outages of a few seconds) would not
 * hold beside them. The walkthrough as written waits on every state the page shows, Step 1 to Step 6,
 * on one store: in one full run of three, beside the disk-tier e2e, the store's usage read 0 at Step 6
 * where the page shows the Step 3 replicas' writes (cause not found; the test prints the store's
 * leaders and failover record when a step fails).
 */
const alone = ['test/e2e/walkthrough-doc.test.ts', 'test/e2e/real-vllm.test.ts'];

// Every process this run starts inherits the marker; another run's processes carry another one.
const runId = randomUUID();
const marker = `KVPOOL_RUN_ID=${runId}`;

/** Processes of this run that run a binary from the component cache (etcd, kube-*, Mooncake). */
function componentProcesses(): Map<number, string> {
  const found = new Map<number, string>();
  const cache = cacheDir();
  for (const entry of readdirSync('/proc')) {
    const pid = Number(entry);
    if (!Number.isInteger(pid) || pid === process.pid) continue;
    try {
      const exe = readlinkSync(`/proc/${pid}/exe`);
      const cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ').trim();
      const ours = readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0').includes(marker);
      if (ours && (exe.startsWith(cache) || cmd.includes(cache))) found.set(pid, cmd);
    } catch {
      // Gone, or not ours to read.
    }
  }
  return found;
}

// A run killed earlier (or a machine restarted under it) may have left a cluster's devices behind.
const swept = await sweepAbandoned();
if (swept.length) console.error(`removed what a killed earlier run left behind: ${swept.join(', ')}`);

/** Seconds a test file's event loop may stay still before the watchdog ends its process. */
const watchdogSeconds = Number(process.env.KVPOOL_WATCHDOG_SECONDS ?? 180);
const watchdogDir = mkdtempSync(join(tmpdir(), 'kvpool-watchdog-'));

async function runNodeTests(files: string[]): Promise<number> {
  const child = spawn(
    process.execPath,
    [
      '--test',
      '--test-global-setup=test/support/global-setup.ts',
      '--test-concurrency=2',
      '--test-timeout=600000',
      '--test-reporter=spec',
      '--test-reporter-destination=stdout',
      // Each file's time at the end, slowest first.
      '--test-reporter=./test/support/file-times-reporter.ts',
      '--test-reporter-destination=stdout',
      // A file's process is ended if a handle keeps it alive 120 s after its tests (not with
      // --test-force-exit, which drops results: see the module).
      '--import=./test/support/exit-after-tests.ts',
      // Each file's event loop beats; the monitor here ends a file whose loop stops turning, named.
      '--import=./test/support/event-loop-watchdog.ts',
      ...files,
    ],
    // Operator logs are for failures: keep a passing run readable unless asked for more.
    {
      stdio: 'inherit',
      env: {
        ...process.env,
        KVPOOL_RUN_ID: runId,
        KVPOOL_LOG_LEVEL: process.env.KVPOOL_LOG_LEVEL ?? 'warn',
        KVPOOL_WATCHDOG_DIR: watchdogDir,
      },
    },
  );
  const monitor = startWatchdogMonitor(watchdogDir, watchdogSeconds);
  try {
    const [code] = (await once(child, 'exit')) as [number | null];
    return code ?? 1;
  } finally {
    monitor.stop();
  }
}

const files = process.argv.slice(2);
let status: number;
if (files.length) status = await runNodeTests(files);
else {
  const together = suites.flatMap((g) => globSync(g)).filter((f) => !alone.includes(f));
  const first = await runNodeTests(together);
  status = first;
  for (const file of alone) {
    console.log(`\nnow alone: ${file}`);
    status = (await runNodeTests([file])) || status;
  }
}
rmSync(watchdogDir, { recursive: true, force: true });

const leaked = [...componentProcesses()];
if (leaked.length) {
  console.error(`\n${leaked.length} process(es) started by the tests were still running; killing them:`);
  for (const [pid, cmd] of leaked) {
    console.error(`  ${pid} ${cmd.slice(0, 160)}`);
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // Exited meanwhile.
    }
  }
  process.exit(1);
}
// A local cluster whose owner is gone must have taken its devices, namespaces and Pods with it.
const abandoned = abandonedTraces();
if (abandoned.length) {
  console.error(`\na local cluster of the tests left this behind: ${abandoned.join(', ')}`);
  process.exit(1);
}
console.error('no process, device or namespace started by the tests is left');
process.exit(status);
