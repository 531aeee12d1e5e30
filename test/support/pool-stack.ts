// What the pool, Binding and injection tests run on: a cluster of the file's own, a one-member
// multi-tenant master of 64 MiB, the operator, and on that master the walkthrough's backend
// `mooncake-dram` and pool `shared-dram`.
import type { KubeClient } from '../../src/kube/client.ts';
import { type BindingOptions, binding, externalBackend, pool } from '../builders/index.ts';
import { ensureNamespace } from './cluster.ts';
import { type IsolatedCluster, startIsolatedCluster } from './isolated-cluster.ts';
import { MooncakeStore } from './mooncake-store.ts';
import { type InProcessOperator, type InProcessOptions, startOperatorInProcess } from './operator.ts';
import { untilBinding } from './pool-waits.ts';

export interface PoolStack {
  cluster: IsolatedCluster;
  store: MooncakeStore;
  operator: InProcessOperator;
}

/** Starts the stack with `namespaces` beside gpustack-system; stops what started when a step fails. */
export async function startPoolStack(options: {
  namespaces: string[];
  operator?: InProcessOptions;
}): Promise<PoolStack> {
  const [cluster, store] = await Promise.allSettled([
    startIsolatedCluster(),
    MooncakeStore.start({ members: 1, memberBytes: 64 << 20, tenants: [] }),
  ]);
  const started: Partial<PoolStack> = {
    ...(cluster.status === 'fulfilled' ? { cluster: cluster.value } : {}),
    ...(store.status === 'fulfilled' ? { store: store.value } : {}),
  };
  try {
    if (cluster.status === 'rejected') throw cluster.reason;
    if (store.status === 'rejected') throw store.reason;
    for (const ns of ['gpustack-system', ...options.namespaces])
      await ensureNamespace(cluster.value.client, ns);
    const operator = await startOperatorInProcess(cluster.value.cp.kubeconfigPath, options.operator);
    started.operator = operator;
    await cluster.value.client.create(externalBackend('mooncake-dram', store.value));
    await cluster.value.client.create(pool('shared-dram', { backend: 'mooncake-dram', total: '64Mi' }));
    return { cluster: cluster.value, store: store.value, operator };
  } catch (err) {
    await stopPoolStack(started);
    throw err;
  }
}

/** Stops the operator, the master and the cluster, each one that is there. */
export async function stopPoolStack(stack: Partial<PoolStack>): Promise<void> {
  await stack.operator?.stop();
  await stack.store?.stop();
  await stack.cluster?.stop();
}

/** Creates Binding `ns/name` (on `shared-dram` unless said) and waits until it is Ready. */
export async function createReadyBinding(client: KubeClient, ns: string, name: string, opts: BindingOptions) {
  await client.create(binding(ns, name, opts));
  await untilBinding(client, ns, name, 'Ready', (b) => b.status?.phase === 'Ready');
}
