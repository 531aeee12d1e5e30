// The warm-failover bench's view of the local cluster: the two backends, their serving leader, when
// they have settled, the keys in the nodes' tier files, the master's figures, and the kill.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { Pod as CorePod } from 'kubernetes-types/core/v1.js';
import type { LocalCluster } from '../local/cluster.ts';
import { descendants, processTable } from '../local/process-tree.ts';
import type { KVCacheBackend } from '../src/api/types.ts';
import type { KubeObject } from '../src/kube/object.ts';
import { waitFor } from '../src/kube/wait-for.ts';
import { parsePrometheusText } from '../src/store/prometheus.ts';
import { parseQuantityBytes } from '../src/vocabulary/quantity.ts';
import { leaderAdminPort } from '../src/vocabulary/store-objects.ts';
import { keysInTierFile } from './failover-warm-figures.ts';

export type Pod = KubeObject<CorePod>;
export const ns = 'gpustack-system';
const v1 = 'worker.gpustack.ai/v1';
export const tierPath = '/var/lib/kvcache-warm';
export const memberSize = '256Mi';
export const tierSize = '2Gi';
export const warmName = 'warm-tier';
export const coldName = 'cold-dram';

export function backend(name: string, tier: boolean): KubeObject {
  const disk = { path: tierPath, capacity: tierSize, offload: 'WriteThrough' };
  return {
    apiVersion: v1,
    kind: 'KVCacheBackend',
    metadata: { name },
    spec: {
      type: 'Mooncake',
      connection: {
        managed: {
          leader: { replicas: 2, multiTenancy: false },
          members: [
            {
              nodeSelector: { 'kubernetes.io/os': 'linux' },
              medium: 'DRAM',
              capacityPerMember: memberSize,
              ...(tier ? { localDisks: [disk] } : {}),
            },
          ],
        },
      },
    },
  } as KubeObject;
}

export async function servingLeader(cluster: LocalCluster, name: string): Promise<Pod | undefined> {
  const pods = await cluster.client.list<Pod>(
    { apiVersion: 'v1', kind: 'Pod', namespace: ns },
    { labelSelector: `app.kubernetes.io/instance=${name},app.kubernetes.io/component=leader` },
  );
  return pods.items.find(
    (p) => p.status?.containerStatuses?.[0]?.ready && !p.metadata.deletionTimestamp && p.status.podIP,
  );
}

/**
 * The backend Ready with every member's segment (and tier) registered, and its serving leader. If the
 * total never matches (a rounding the bench did not foresee), Ready with a serving leader, said in the log.
 */
export async function settled(cluster: LocalCluster, name: string, capacity: bigint): Promise<Pod> {
  let seen = '';
  const ready = (full: boolean) => async () => {
    const b = await cluster.client.get<KVCacheBackend>({ apiVersion: v1, kind: 'KVCacheBackend', name });
    const total = b.status?.capacity?.total;
    seen = `phase ${b.status?.phase}, capacity ${total}`;
    if (b.status?.phase !== 'Ready' || !total || (full && parseQuantityBytes(total) !== capacity))
      return undefined;
    return servingLeader(cluster, name);
  };
  const what = `${name} Ready with its full capacity and a serving leader`;
  try {
    return await waitFor(ready(true), { what, timeoutMs: 180_000, intervalMs: 250 });
  } catch (err) {
    console.log(`${(err as Error).message} (last seen: ${seen}); waiting for Ready alone`);
    return waitFor(ready(false), { what: `${name} Ready`, timeoutMs: 60_000, intervalMs: 250 });
  }
}

/** The run's keys in the nodes' tier files written since `since` (earlier runs' buckets cannot hold them). */
export function tierKeys(
  cluster: LocalCluster,
  prefix: string,
  since: number,
  seen: Map<string, number>,
  keys: Set<string>,
) {
  for (const node of cluster.nodes) {
    const dir = join(cluster.root, 'nodes', node, tierPath);
    for (const f of readdirSync(dir, { recursive: true, encoding: 'utf8' })) {
      if (f.startsWith('.kvpool-tier')) continue;
      const path = join(dir, f);
      const st = statSync(path, { throwIfNoEntry: false });
      if (!st?.isFile() || st.mtimeMs < since - 2000 || seen.get(path) === st.size) continue;
      seen.set(path, st.size);
      for (const k of keysInTierFile(readFileSync(path), prefix)) keys.add(k);
    }
  }
  return keys;
}

export async function metric(ip: string, name: string): Promise<number | null> {
  try {
    const text = await (
      await fetch(`http://${ip}:${leaderAdminPort}/metrics`, { signal: AbortSignal.timeout(2000) })
    ).text();
    return parsePrometheusText(text).get(name)?.[0]?.value ?? null;
  } catch {
    return null;
  }
}

/** The leader container's processes and their descendants (mooncake_master among them). */
export async function killPids(cluster: LocalCluster, pod: Pod): Promise<number[]> {
  const roots = await cluster.node(pod.spec!.nodeName!).containerPids(ns, pod.metadata.name!);
  if (!roots.length) throw new Error(`no container process for ${pod.metadata.name}`);
  const table = processTable();
  return roots.flatMap((p) => [p, ...descendants(p, table)]);
}

/** The store's view: when a master started after the kill first reports tier bytes, and all it had before. */
export interface Registration {
  firstMs: number | null;
  allMs: number | null;
  lastBytes: number | null;
}

export async function watchRegistration(
  cluster: LocalCluster,
  name: string,
  t0: number,
  before: number | null,
  r: Registration,
) {
  const pods = await cluster.client
    .list<Pod>(
      { apiVersion: 'v1', kind: 'Pod', namespace: ns },
      { labelSelector: `app.kubernetes.io/instance=${name},app.kubernetes.io/component=leader` },
    )
    .catch(() => ({ items: [] as Pod[] }));
  const ips = pods.items.flatMap((p) => (p.status?.podIP ? [p.status.podIP] : []));
  // Every master answering now started after the kill: the killed one's processes are gone.
  const values = (await Promise.all(ips.map((ip) => metric(ip, 'master_allocated_file_size_bytes')))).filter(
    (v): v is number => v !== null,
  );
  if (!values.length) return;
  const bytes = Math.max(...values);
  r.lastBytes = bytes;
  if (bytes > 0 && r.firstMs === null) r.firstMs = Date.now() - t0;
  if (before !== null && before > 0 && bytes >= before && r.allMs === null) r.allMs = Date.now() - t0;
}
