// The figures the master of a disk-tier backend (test/builders/backend.ts tierBackend) reports on its
// admin port.
import { gauge, parsePrometheusText } from '../../src/store/prometheus.ts';

/** The master's own figures, read from its admin port; undefined while nothing answers there. */
export async function masterFigures(holder: string) {
  const ip = holder.split(':')[0];
  const res = await fetch(`http://${ip}:9003/metrics`, { signal: AbortSignal.timeout(2000) });
  if (!res.ok) return undefined;
  const f = parsePrometheusText(await res.text());
  return {
    keys: gauge(f, 'master_key_count'),
    /** Objects with a replica on a member's disk tier. */
    fileObjects: gauge(f, 'file_cache_nums_'),
    fileBytes: gauge(f, 'master_allocated_file_size_bytes'),
    fileCapacity: gauge(f, 'master_total_file_capacity_bytes'),
  };
}
