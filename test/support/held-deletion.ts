// Step 3's rule on the local cluster: a Binding a ModelDeployment uses is deleted, its deletion is held
// (Releasable=False, HeldByWorkloads naming the deployment), and passes later the same replicas serve.
import assert from 'node:assert/strict';
import type { KVCachePoolBinding } from '../../src/api/types.ts';
import { workerApiVersion } from '../../src/vocabulary/identity.ts';
import { conditionOf, type E2ECluster } from './local-cluster.ts';
import { waitFor } from './wait.ts';

/** Deletes team-a/team-a and shows it held by qwen-chat, whose ready replicas (`uids`) stay untouched. */
export async function expectDeletionHeld(e: E2ECluster, uids: () => Promise<string[]>): Promise<void> {
  const before = await uids();
  await e.kubectl(['-n', 'team-a', 'delete', 'kvcpb', 'team-a', '--wait=false']);
  const b = await waitFor(
    async () => {
      const x = await e.cluster.client.get<KVCachePoolBinding>({
        apiVersion: workerApiVersion,
        kind: 'KVCachePoolBinding',
        namespace: 'team-a',
        name: 'team-a',
      });
      return conditionOf(x, 'Releasable')?.reason === 'HeldByWorkloads' ? x : undefined;
    },
    { what: 'HeldByWorkloads' },
  );
  assert.match(conditionOf(b, 'Releasable')!.message, /ModelDeployment\/qwen-chat/);
  // Passes later (the operator's own count of ModelDeployment reconciles) the same two replicas
  // still serve: nothing was rolled.
  const from = await e.reconciles('modeldeployment');
  await waitFor(() => e.reconciles('modeldeployment'), {
    what: 'more ModelDeployment passes',
    until: (n) => n >= from + 3,
    timeoutMs: 120_000,
    intervalMs: 2000,
  });
  const now = await uids();
  assert.equal(now.length, 2);
  assert.deepEqual(now, before, 'the workload keeps running, untouched');
}
