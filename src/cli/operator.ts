// `kvpool operator`: the operator process. Controllers run while this replica holds the Lease;
// SIGTERM drains in-flight reconciles and releases the Lease.
import { hostname } from 'node:os';
import { parseArgs } from 'node:util';
import { buildContext, registerControllers } from '../controllers/index.ts';
import { KubeClient } from '../kube/client.ts';
import { log } from '../kube/log.ts';
import { Manager } from '../kube/manager.ts';

export async function runOperator(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      kubeconfig: { type: 'string' },
      namespace: { type: 'string', default: process.env.KUBERNETES_POD_NAMESPACE ?? 'gpustack-system' },
      identity: { type: 'string', default: `${hostname()}_${process.pid}` },
      'lease-name': { type: 'string', default: 'kvpool-operator' },
      'leader-elect': { type: 'boolean', default: true },
      'lease-duration-ms': { type: 'string', default: '15000' },
      'renew-deadline-ms': { type: 'string', default: '10000' },
      'retry-period-ms': { type: 'string', default: '2000' },
      'health-port': { type: 'string', default: '8081' },
      'store-poll-ms': { type: 'string', default: '1000' },
      'observe-interval-ms': { type: 'string', default: '15000' },
    },
  });
  const client = values.kubeconfig
    ? await KubeClient.fromKubeconfigFile(values.kubeconfig)
    : await KubeClient.fromDefault();
  const manager = new Manager({
    client,
    identity: values.identity,
    healthPort: Number(values['health-port']),
    ...(values['leader-elect']
      ? {
          leaderElection: {
            namespace: values.namespace,
            leaseName: values['lease-name'],
            leaseDurationMs: Number(values['lease-duration-ms']),
            renewDeadlineMs: Number(values['renew-deadline-ms']),
            retryPeriodMs: Number(values['retry-period-ms']),
          },
        }
      : {}),
  });
  const operatorOptions = {
    namespace: values.namespace,
    storePollMs: Number(values['store-poll-ms']),
    observeIntervalMs: Number(values['observe-interval-ms']),
  };
  const ctx = buildContext(client, operatorOptions);
  registerControllers(manager, ctx, operatorOptions);
  const stopped = new Promise<void>((resolve) => {
    for (const sig of ['SIGTERM', 'SIGINT'] as const) process.once(sig, () => resolve());
  });
  await manager.start();
  log.info({ identity: values.identity, healthPort: manager.healthPort }, 'operator started');
  await stopped;
  log.info('shutting down');
  await manager.shutdown();
  ctx.store.stop();
  await client.close();
  return 0;
}
