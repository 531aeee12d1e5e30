// The operator running inside a test process (no leader election), optionally with its admission
// webhooks served on a loopback port and registered with the apiserver.
import { KubeClient } from '../../src/kube/client.ts';
import { awaitAdmissionInForce } from '../../src/local/admission-in-force.ts';
import { freePort } from '../../src/local/ports.ts';
import { type RunningOperator, startOperator } from '../../src/operator.ts';

export interface InProcessOperator extends RunningOperator {
  client: KubeClient;
}

export async function startOperatorInProcess(
  kubeconfig: string,
  options: { namespace?: string; storePollMs?: number; webhooks?: boolean } = {},
): Promise<InProcessOperator> {
  const client = await KubeClient.fromKubeconfigFile(kubeconfig);
  const port = options.webhooks ? await freePort() : 0;
  const running = await startOperator({
    client,
    namespace: options.namespace ?? 'gpustack-system',
    identity: 'test',
    storePollMs: options.storePollMs ?? 200,
    replicaPollMs: 200,
    ...(options.webhooks
      ? {
          webhook: {
            port,
            host: '127.0.0.1',
            reach: { url: `https://127.0.0.1:${port}` },
            hosts: ['127.0.0.1'],
          },
        }
      : {}),
  });
  // The apiserver loads the webhook configurations through its own watch: wait until it calls them.
  if (options.webhooks) await awaitAdmissionInForce(client, 30_000);
  return {
    ...running,
    client,
    async stop() {
      await running.stop();
      await client.close();
    },
  };
}
