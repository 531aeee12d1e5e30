// The operator running inside a test process, with the chart's ServiceAccount and RBAC (so a missing
// permission fails the test), optionally with its admission webhooks served on a loopback port. The
// test plays the installer: it applies the account and the webhook configurations as the cluster
// admin, as the chart does, and the operator sets their CA bundle.

import { awaitAdmissionInForce } from '../../local/admission-in-force.ts';
import { freePort } from '../../local/ports.ts';
import { KubeClient } from '../../src/kube/client.ts';
import type { LeaderElectionOptions } from '../../src/kube/leader-election.ts';
import { type RunningOperator, startOperator } from '../../src/kvpool/start-operator.ts';
import { applyWebhookConfigurations, webhookHooks } from '../../src/webhooks/index.ts';
import { accountKubeconfig, installOperatorAccess } from './operator-access.ts';

export interface InProcessOperator extends RunningOperator {
  /** The operator's own client: the chart's ServiceAccount. */
  client: KubeClient;
  /** The port its webhooks are served on (when asked for). */
  webhookPort?: number;
}

export interface InProcessOptions {
  namespace?: string;
  storePollMs?: number;
  /** How often each controller passes over every object without an event (the operator's default unless said). */
  observeIntervalMs?: number;
  webhooks?: boolean;
  /** Apply the webhook configurations, pointing at this replica (default); a second replica does not. */
  installWebhookConfigurations?: boolean;
  identity?: string;
  /** Run with leader election on this Lease (timings default to a fast test election). */
  leaderElection?: Partial<Omit<LeaderElectionOptions, 'namespace' | 'identity'>> & { leaseName: string };
  /** How often each replica re-reads the webhook certificate Secret. */
  certificateRefreshMs?: number;
  onLostLeadership?: () => void;
  /** How long a domain claim whose Binding does not exist is kept (the operator's 60 s unless said). */
  domainClaimGraceMs?: number;
}

export async function startOperatorInProcess(
  kubeconfig: string,
  options: InProcessOptions = {},
): Promise<InProcessOperator> {
  const namespace = options.namespace ?? 'gpustack-system';
  const admin = await KubeClient.fromKubeconfigFile(kubeconfig);
  const account = await (async () => {
    try {
      await installOperatorAccess(admin, namespace);
      return await accountKubeconfig(admin, kubeconfig, namespace);
    } catch (err) {
      await admin.close();
      throw err;
    }
  })();
  const client = await KubeClient.fromKubeconfigFile(account.path);
  const port = options.webhooks ? await freePort() : 0;
  const reach = { url: `https://127.0.0.1:${port}` };
  const cleanup = async () => {
    await client.close();
    await admin.close();
    account.remove();
  };
  try {
    // The installer's part (the chart's webhook configurations); the operator sets their CA bundle.
    if (options.webhooks && (options.installWebhookConfigurations ?? true))
      await applyWebhookConfigurations(admin, webhookHooks, reach, '');
    const running = await startOperator({
      client,
      namespace,
      identity: options.identity ?? 'test',
      storePollMs: options.storePollMs ?? 200,
      replicaPollMs: 200,
      ...(options.domainClaimGraceMs ? { domainClaimGraceMs: options.domainClaimGraceMs } : {}),
      ...(options.observeIntervalMs
        ? { observeIntervalMs: options.observeIntervalMs, poolObserveIntervalMs: options.observeIntervalMs }
        : {}),
      ...(options.leaderElection
        ? {
            leaderElection: {
              namespace,
              leaseDurationMs: 3000,
              renewDeadlineMs: 2000,
              retryPeriodMs: 500,
              ...options.leaderElection,
            },
          }
        : {}),
      // A lost Lease stops this replica's controllers; the test process itself goes on.
      onLostLeadership: options.onLostLeadership ?? (() => undefined),
      ...(options.webhooks
        ? {
            webhook: {
              port,
              host: '127.0.0.1',
              reach,
              hosts: ['127.0.0.1'],
              ...(options.certificateRefreshMs ? { refreshMs: options.certificateRefreshMs } : {}),
            },
          }
        : {}),
    });
    // The apiserver loads the webhook configurations through its own watch: wait until it calls them.
    if (options.webhooks && !options.leaderElection) await awaitAdmissionInForce(admin, 30_000);
    return {
      ...running,
      client,
      ...(options.webhooks ? { webhookPort: port } : {}),
      async stop() {
        await running.stop();
        await cleanup();
      },
    };
  } catch (err) {
    await cleanup();
    throw err;
  }
}
