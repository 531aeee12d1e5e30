// `kvpool operator`: the operator process. Controllers run while this replica holds the Lease;
// SIGTERM drains in-flight reconciles and releases the Lease. In a Pod it authenticates with the
// projected ServiceAccount token and runs in the Pod's namespace; admission is reached through the
// webhook Service, whose configurations come with the chart (`--webhook-url` registers them itself).

import { existsSync, readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { parseArgs } from 'node:util';
import { KubeClient } from '../kube/client.ts';
import { log } from '../kube/log.ts';
import { shutdownRequested } from '../kube/shutdown.ts';
import { operatorDefaults as d } from './defaults.ts';
import { startOperator } from './start-operator.ts';

const serviceAccountNamespaceFile = '/var/run/secrets/kubernetes.io/serviceaccount/namespace';

/** The Pod's namespace (downward API, else the ServiceAccount's), else the default. */
function defaultNamespace(): string {
  if (process.env.KUBERNETES_POD_NAMESPACE) return process.env.KUBERNETES_POD_NAMESPACE;
  if (existsSync(serviceAccountNamespaceFile))
    return readFileSync(serviceAccountNamespaceFile, 'utf8').trim();
  return d.namespace;
}

/** Every name a client inside the cluster may use for the Service. */
export function serviceHosts(service: string, namespace: string, clusterDomain: string): string[] {
  return [
    service,
    `${service}.${namespace}`,
    `${service}.${namespace}.svc`,
    `${service}.${namespace}.svc.${clusterDomain}`,
  ];
}

export async function runOperator(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      kubeconfig: { type: 'string' },
      namespace: { type: 'string', default: defaultNamespace() },
      identity: { type: 'string', default: `${hostname()}_${process.pid}` },
      'lease-name': { type: 'string', default: d.leaseName },
      'leader-elect': { type: 'boolean', default: true },
      'lease-duration-ms': { type: 'string', default: String(d.leaderElection.leaseDurationMs) },
      'renew-deadline-ms': { type: 'string', default: String(d.leaderElection.renewDeadlineMs) },
      'retry-period-ms': { type: 'string', default: String(d.leaderElection.retryPeriodMs) },
      'health-port': { type: 'string', default: String(d.healthPort) },
      'store-poll-ms': { type: 'string', default: String(d.storePollMs) },
      'observe-interval-ms': { type: 'string', default: String(d.observeIntervalMs) },
      'tier-cleanup-deadline-ms': { type: 'string', default: String(d.tierCleanupDeadlineMs) },
      'webhook-port': { type: 'string', default: String(d.webhook.port) },
      'webhook-host': { type: 'string', default: d.webhook.host },
      'webhook-service': { type: 'string', default: d.webhook.service },
      'webhook-secret': { type: 'string', default: d.webhook.secret },
      'webhook-certificates': { type: 'string', default: d.webhook.certificates },
      'cluster-domain': { type: 'string', default: d.webhook.clusterDomain },
      'webhook-url': { type: 'string' },
    },
  });
  const certificates = values['webhook-certificates'];
  if (certificates !== 'self-managed' && certificates !== 'cert-manager') {
    throw new Error(
      `--webhook-certificates=${certificates}: must be self-managed (the operator issues them) or cert-manager`,
    );
  }
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
              : serviceHosts(values['webhook-service'], values.namespace, values['cluster-domain']),
            secretName: values['webhook-secret'],
            register: Boolean(webhookUrl),
            externalCertificates: certificates === 'cert-manager',
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
