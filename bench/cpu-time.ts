// CPU time a process has used (every thread's, user and system), from /proc/<pid>/stat.
import { readFileSync } from 'node:fs';

/** The kernel's clock ticks per second for /proc times (USER_HZ, 100 on Linux). */
const ticksPerSecond = 100;

/** Milliseconds of CPU `pid` has used so far; undefined once it is gone. */
export function cpuMs(pid: number | undefined): number | undefined {
  if (pid === undefined) return undefined;
  try {
    // The command name (field 2) may hold spaces: count from the ')' that ends it.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // utime and stime are fields 14 and 15 of the line, 12 and 13 after the name.
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / ticksPerSecond;
  } catch {
    return undefined;
  }
}
