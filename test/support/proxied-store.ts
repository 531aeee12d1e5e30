// What the ledger fault tests start: an isolated control plane, and a real one-member master whose
// admin endpoint is reached through a fault proxy (so a test can hold, fail or record each write).
import { AdminFaultProxy } from './admin-fault-proxy.ts';
import { type IsolatedCluster, startIsolatedCluster } from './isolated-cluster.ts';
import { MooncakeStore } from './mooncake-store.ts';

const MiB = 1024 * 1024;

export async function startProxiedStore(): Promise<{
  cluster: IsolatedCluster;
  store: MooncakeStore;
  proxy: AdminFaultProxy;
}> {
  const [cluster, store] = await Promise.all([
    startIsolatedCluster(),
    MooncakeStore.start({ members: 1, memberBytes: 64 * MiB, tenants: [] }),
  ]);
  const proxy = new AdminFaultProxy(store.adminAddress);
  await proxy.start();
  return { cluster, store, proxy };
}
