// The machine's process tree as /proc tells it: each process's parent and command name. Used to find
// what a cluster or a container runs (a Pod's processes live in their own PID namespace but show here).
import { readdirSync, readFileSync } from 'node:fs';

export interface ProcessTable {
  children: Map<number, number[]>;
  comm: Map<number, string>;
}

/** Every process now, by parent, with its command name. */
export function processTable(): ProcessTable {
  const children = new Map<number, number[]>();
  const comm = new Map<number, string>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const pid = Number(entry);
      // The command name sits in parentheses and may itself hold spaces or parentheses.
      comm.set(pid, stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')));
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      children.set(ppid, [...(children.get(ppid) ?? []), pid]);
    } catch {
      // Gone meanwhile.
    }
  }
  return { children, comm };
}

/** Every process below `pid`, depth first. */
export function descendants(pid: number, table = processTable()): number[] {
  const out: number[] = [];
  const stack = [...(table.children.get(pid) ?? [])];
  while (stack.length) {
    const p = stack.pop()!;
    out.push(p);
    stack.push(...(table.children.get(p) ?? []));
  }
  return out;
}
