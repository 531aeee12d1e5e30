// `kvpool operator`: the operator process. Controllers run while this replica holds the Lease;
// SIGTERM drains in-flight reconciles and releases the Lease.

import { hostname } from 'node:os';
import { parseArgs } from 'node:util';
import { shutdownRequested } from '../agent/shutdown.ts';
import { KubeClient } from '../kube/client.ts';
import { log } from '../kube/log.ts';
import { startOperator } from '../operator.ts';

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
      'tier-cleanup-deadline-ms': { type: 'string', default: '300000' },
      'webhook-port': { type: 'string', default: '9443' },
      'webhook-host': { type: 'string', default: '0.0.0.0' },
      'webhook-service': { type: 'string', default: 'kvpool-webhook' },
      'webhook-url': { type: 'string' },
    },
  });
  const client = values.kubeconfig
    ? await KubeClient.fromKubeconfigFile(values.kubeconfig)
    : await KubeClient.fromDefault();
  const stopped = shutdownRequested();
  const webhookUrl = values['webhook-url'];
  const operator = await startOperator({
    client,
    namespace: values.namespace,
    identity: values.identity,
    healthPort: Number(values['health-port']),
    storePollMs: Number(values['store-poll-ms']),
    observeIntervalMs: Number(values['observe-interval-ms']),
    tierCleanupDeadlineMs: Number(values['tier-cleanup-deadline-ms']),
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
    ...(values['webhook-port'] !== '0'
      ? {
          webhook: {
            port: Number(values['webhook-port']),
            host: values['webhook-host'],
            reach: webhookUrl
              ? { url: webhookUrl }
              : { service: { namespace: values.namespace, name: values['webhook-service'], port: 443 } },
            hosts: webhookUrl
              ? [new URL(webhookUrl).hostname]
              : [
                  `${values['webhook-service']}.${values.namespace}.svc`,
                  `${values['webhook-service']}.${values.namespace}.svc.cluster.local`,
                ],
          },
        }
      : {}),
  });
  log.info({ identity: values.identity, healthPort: operator.manager.healthPort }, 'operator started');
  await stopped;
  log.info('shutting down');
  await operator.stop();
  await client.close();
  return 0;
}
