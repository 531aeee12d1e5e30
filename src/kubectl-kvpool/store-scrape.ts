// How `kubectl kvpool top` reaches a store from outside the cluster: a managed backend's serving
// leader Pod through the API server's Pod proxy (the caller's own RBAC: pods/proxy in the store's
// namespace), an external backend's Admin endpoint directly. See
// docs/decisions/0024-kubectl-kvpool-reaches-the-store.md.
import type { KVCacheBackend } from '../api/types.ts';
import type { KubeClient } from '../kube/client.ts';
import {
  componentLabel,
  instanceLabel,
  leaderComponent,
  leaderMetricsPort,
} from '../vocabulary/store-objects.ts';
import type { Pod, Snapshot } from './snapshot.ts';
import type { Scrape } from './top-model.ts';

const timeoutMs = 10_000;

/** The Pod that serves a managed backend: the ready leader the Lease names, else any ready leader. */
export function servingLeader(s: Snapshot, b: KVCacheBackend): Pod | undefined {
  const ready = s.storePods.filter(
    (p) =>
      p.metadata.labels?.[instanceLabel] === b.metadata.name &&
      p.metadata.labels?.[componentLabel] === leaderComponent &&
      !p.metadata.deletionTimestamp &&
      p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'),
  );
  const holder = s.leases.find((l) => l.metadata.name === `${b.metadata.name}-leader`)?.spec?.holderIdentity;
  return ready.find((p) => p.status?.podIP && holder?.startsWith(`${p.status.podIP}:`)) ?? ready[0];
}

/** The leader's read-only metrics port; a leader of an earlier template has only its admin port. */
function metricsPort(pod: Pod): number {
  const ports = pod.spec?.containers?.flatMap((c) => c.ports ?? []) ?? [];
  const named = (name: string) => ports.find((p) => p.name === name)?.containerPort;
  return named('metrics') ?? named('admin') ?? leaderMetricsPort;
}

async function viaPodProxy(client: KubeClient, pod: Pod): Promise<Scrape> {
  const port = metricsPort(pod);
  const ns = pod.metadata.namespace!;
  const source = `Pod ${ns}/${pod.metadata.name}:${port} through the API server`;
  try {
    const res = await client.send(
      'GET',
      `/api/v1/namespaces/${ns}/pods/${pod.metadata.name}:${port}/proxy/metrics`,
      {
        timeoutMs,
      },
    );
    const text = await res.body.text();
    if (res.statusCode >= 300)
      return { source, error: `HTTP ${res.statusCode}: ${text.slice(0, 300).trim()}` };
    return { source, text };
  } catch (err) {
    return { source, error: err instanceof Error ? err.message : String(err) };
  }
}

async function direct(address: string): Promise<Scrape> {
  const source = `http://${address}/metrics`;
  try {
    const res = await fetch(source, { signal: AbortSignal.timeout(timeoutMs), redirect: 'error' });
    const text = await res.text();
    return res.ok ? { source, text } : { source, error: `HTTP ${res.status}: ${text.slice(0, 300).trim()}` };
  } catch (err) {
    return { source, error: err instanceof Error ? err.message : String(err) };
  }
}

export async function scrapeStores(client: KubeClient, s: Snapshot): Promise<Map<string, Scrape>> {
  const out = new Map<string, Scrape>();
  await Promise.all(
    s.backends.map(async (b) => {
      const name = b.metadata.name!;
      const admin = b.spec.connection.external?.endpoints.find((e) => e.name === 'Admin')?.address;
      if (admin) {
        out.set(name, await direct(admin));
        return;
      }
      const pod = servingLeader(s, b);
      out.set(name, pod ? await viaPodProxy(client, pod) : { error: 'no leader Pod is ready' });
    }),
  );
  return out;
}
