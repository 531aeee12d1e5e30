// The machine-wide kernel settings a kubelet changes when it starts (it tunes them for Pods, as on a
// machine it owns). The local cluster's nodes share this machine, so their values are recorded before
// the first kubelet starts and put back when the cluster stops.
import { readFileSync, writeFileSync } from 'node:fs';

const tunables = [
  'vm/overcommit_memory',
  'vm/panic_on_oom',
  'kernel/panic',
  'kernel/panic_on_oops',
  'kernel/keys/root_maxkeys',
  'kernel/keys/root_maxbytes',
];

export class KernelSettings {
  private readonly values: Map<string, string>;

  private constructor(values: Map<string, string>) {
    this.values = values;
  }

  static record(): KernelSettings {
    const values = new Map<string, string>();
    for (const t of tunables) {
      try {
        values.set(t, readFileSync(`/proc/sys/${t}`, 'utf8').trim());
      } catch {
        // Not on this kernel.
      }
    }
    return new KernelSettings(values);
  }

  restore(): void {
    for (const [t, value] of this.values) {
      try {
        if (readFileSync(`/proc/sys/${t}`, 'utf8').trim() !== value) writeFileSync(`/proc/sys/${t}`, value);
      } catch {
        // Not writable here: leave it.
      }
    }
  }
}
