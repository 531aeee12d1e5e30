// The runner's side of the event-loop watchdog (event-loop-watchdog.ts): reads the heartbeat file of
// every test file's process and ends a process whose heartbeat is older than the limit, naming its file
// on stderr, so the runner reports that file failed instead of waiting on it until the suite's limit.
import { readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';

export interface WatchdogMonitor {
  /** The files ended so far. */
  ended: string[];
  stop(): void;
}

export function startWatchdogMonitor(dir: string, limitSeconds: number): WatchdogMonitor {
  const ended: string[] = [];
  const check = () => {
    let entries: string[] = [];
    try {
      entries = readdirSync(dir);
    } catch {
      return;
    }
    for (const pid of entries) {
      const path = join(dir, pid);
      let beat: { test: string; at: number };
      try {
        beat = JSON.parse(readFileSync(path, 'utf8'));
      } catch {
        continue;
      }
      const silent = (Date.now() - beat.at) / 1000;
      if (silent < limitSeconds) continue;
      rmSync(path, { force: true });
      try {
        process.kill(Number(pid), 'SIGKILL');
      } catch {
        continue;
      }
      ended.push(beat.test);
      console.error(`\n${beat.test}: its event loop has not turned for ${Math.round(silent)} s; ended it`);
    }
  };
  const timer = setInterval(check, Math.min(5000, limitSeconds * 250));
  return { ended, stop: () => clearInterval(timer) };
}
