// The Grafana dashboard against a real Prometheus (Debian's package) scraping the local cluster: the
// operator Pods' metrics port and the serving store leader's admin /metrics, by Pod IP, after Steps 1
// and 2 and a write and a read under the Binding's domain. Every panel's every query returns data.

import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { KVCachePoolBinding } from '../../src/api/types.ts';
import type { KubeObject } from '../../src/kube/object.ts';
import { dashboardQueries } from '../support/dashboard.ts';
import { type E2ECluster, startE2ECluster } from '../support/local-cluster.ts';
import { Prometheus } from '../support/prometheus.ts';
import { seedText } from '../support/seed.ts';
import { runStoreClient } from '../support/store-client.ts';
import { waitFor } from '../support/wait.ts';

type Pod = KubeObject & {
  spec: { containers: { ports?: { name?: string; containerPort: number }[] }[] };
  status?: { podIP?: string; conditions?: { type: string; status: string }[] };
};
const isReady = (p: Pod) => p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True');

describe('the Grafana dashboard on a real Prometheus', () => {
  let e: E2ECluster;
  let prometheus: Prometheus | undefined;
  const pods = async (namespace: string, labelSelector: string) =>
    (await e.cluster.client.list<Pod>({ apiVersion: 'v1', kind: 'Pod', namespace }, { labelSelector })).items;

  before(async () => {
    e = await startE2ECluster();
    await e.kubectl(['create', 'namespace', 'team-a']);
    for (const step of ['step-1-store.yaml', 'step-2-pool-binding.yaml'])
      await e.kubectl(['apply', '--server-side', '-f', '-'], seedText(step));
    await waitFor(
      async () => {
        const b = await e.cluster.client.get<KVCachePoolBinding>({
          apiVersion: 'worker.gpustack.ai/v1',
          kind: 'KVCachePoolBinding',
          namespace: 'team-a',
          name: 'team-a',
        });
        return b.status?.phase === 'Ready' ? true : undefined;
      },
      { what: 'the Binding granted' },
    );
  });
  after(async () => {
    await prometheus?.stop();
    await e?.stop();
  });

  it('evaluates every panel’s query to data', async () => {
    const operators = await waitFor(
      async () => {
        const p = (await pods(e.cluster.namespace, 'app.kubernetes.io/component=operator')).filter(isReady);
        return p.length === 2 ? p : undefined;
      },
      { what: 'both operator replicas ready' },
    );
    const leader = (
      await pods(
        'gpustack-system',
        'app.kubernetes.io/instance=mooncake-dram,app.kubernetes.io/component=leader',
      )
    ).find(isReady)!;
    const port = (p: Pod, name: string) =>
      p.spec.containers.flatMap((c) => c.ports ?? []).find((x) => x.name === name)!.containerPort;
    prometheus = await Prometheus.start([
      { job: 'kvpool-operator', targets: operators.map((p) => `${p.status!.podIP}:${port(p, 'health')}`) },
      {
        job: 'kvpool-store',
        targets: [`${leader.status!.podIP}:${port(leader, 'metrics')}`],
        labels: { backend: 'mooncake-dram' },
      },
    ]);
    // Data for the store's panels: a write and a read under the Binding's domain.
    const client = {
      master: `${leader.status!.podIP}:50051`,
      host: e.cluster.hostAddress,
      tenant: 'default',
    };
    assert.deepEqual(
      await runStoreClient(client, [{ op: 'put', key: 'dashboard', data: Buffer.alloc(1 << 20, 7) }]),
      [{ rc: 0 }],
    );
    await runStoreClient(client, [{ op: 'get', key: 'dashboard' }]);
    const targets = await waitFor(
      async () => {
        const t = await prometheus!.targets();
        return t.length === 3 && t.every((x) => x.health === 'up') ? t : undefined;
      },
      { what: 'every target scraped and up' },
    );
    console.log(`Prometheus scrapes ${targets.map((t) => `${t.job} ${t.instance}`).join(', ')}`);
    const queries = dashboardQueries();
    assert.ok(queries.length >= 40, `the dashboard has ${queries.length} queries`);
    let empty: string[] = [];
    await waitFor(
      async () => {
        empty = [];
        for (const q of queries) {
          const r = await prometheus!.query(q.expr);
          if (r.status !== 'success') throw new Error(`${q.panel} ${q.refId}: ${r.error} in ${q.expr}`);
          if (!r.data?.result.length) empty.push(`${q.panel} (${q.refId}): ${q.expr}`);
        }
        return empty.length === 0 ? true : undefined;
      },
      { what: 'every query returns data', timeoutMs: 120_000 },
    ).catch((err: unknown) => {
      throw new Error(`queries without data:\n${empty.join('\n')}\n${err}`);
    });
    console.log(`${queries.length} queries of the dashboard's panels all return data`);
  });
});
