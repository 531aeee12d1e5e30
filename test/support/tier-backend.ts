// The KVCacheBackend of the warm-failover e2e (a write-through disk tier on every node) and the figures
// its master reports on its admin port.
import type { KubeObject } from '../../src/kube/object.ts';
import { gauge, parsePrometheusText } from '../../src/store/prometheus.ts';

export const tierPath = '/var/lib/kvcache-warm';

/** A backend whose members on every node keep a 1Gi write-through tier at `tierPath`. */
export function tierBackend(
  name: string,
  options: { replicas: number; capacityPerMember: string; foreignContent?: 'Refuse' | 'Remove' },
): KubeObject {
  const { replicas, capacityPerMember, foreignContent } = options;
  return {
    apiVersion: 'worker.gpustack.ai/v1',
    kind: 'KVCacheBackend',
    metadata: { name },
    spec: {
      connection: {
        managed: {
          // No tenant ledger, so no Binding holds the deletion.
          leader: { replicas, multiTenancy: false },
          members: [
            {
              nodeSelector: { 'kubernetes.io/os': 'linux' },
              medium: 'DRAM',
              capacityPerMember,
              localDisks: [
                {
                  path: tierPath,
                  capacity: '1Gi',
                  offload: 'WriteThrough',
                  ...(foreignContent ? { foreignContent } : {}),
                },
              ],
            },
          ],
        },
      },
    },
  } as KubeObject;
}

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
