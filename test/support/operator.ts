// The operator's controllers running inside a test process against the shared control plane.

import type { OperatorContext } from '../../src/controllers/context.ts';
import { buildContext, registerControllers } from '../../src/controllers/index.ts';
import { KubeClient } from '../../src/kube/client.ts';
import { Manager } from '../../src/kube/manager.ts';

export interface InProcessOperator {
  ctx: OperatorContext;
  client: KubeClient;
  stop(): Promise<void>;
}

export async function startOperatorInProcess(
  kubeconfig: string,
  namespace = 'gpustack-system',
  storePollMs = 500,
): Promise<InProcessOperator> {
  const client = await KubeClient.fromKubeconfigFile(kubeconfig);
  const manager = new Manager({ client, identity: 'test' });
  const options = { namespace, storePollMs, observeIntervalMs: 15_000 };
  const ctx = buildContext(client, options);
  registerControllers(manager, ctx, options);
  await manager.start();
  return {
    ctx,
    client,
    async stop() {
      await manager.shutdown();
      ctx.store.stop();
      await client.close();
    },
  };
}
