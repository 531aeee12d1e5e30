// `kvpool uninstall`: what `helm uninstall` runs before it removes the operator (a pre-delete hook).
// Without the operator nothing would ever remove kvpool's finalizers, so deleting a Binding, or the
// namespace holding one, would hang. This step removes the admission webhooks and stops the operator
// (so neither refuses the change nor undoes it), then removes the finalizers and says so on every
// object it released, with an Event that tells what stays behind (the stores keep running and keep
// their tenant entries) and how to take the objects back (install kvpool again). Last, it deletes the
// Bindings' domain claims (Leases in the release namespace), which mean nothing without the operator.
import { parseArgs } from 'node:util';
import type { Deployment } from 'kubernetes-types/apps/v1.js';
import { KubeClient, type KubeObject, refOf } from '../kube/client.ts';
import { ApiError } from '../kube/errors.ts';
import { EventRecorder } from '../kube/events.ts';
import { log, objectLogger } from '../kube/log.ts';
import { waitFor } from '../kube/wait-for.ts';
import { removeFinalizer } from '../operator-io/apply.ts';
import { claimSelector } from '../vocabulary/domain-claims.ts';
import { finalizer } from '../vocabulary/identity.ts';
import { mutatingConfigurationName, validatingConfigurationName } from '../webhooks/configuration.ts';

const kinds = ['ModelDeployment', 'KVCachePoolBinding', 'KVCachePool', 'KVCacheBackend'];

export const uninstallMessage =
  'kvpool was uninstalled: its finalizer was removed and nothing manages this object now. A store it ' +
  'runs keeps running and the store keeps its tenant entries; install kvpool again to manage it, or ' +
  'delete it (and its store) with kubectl.';

interface Options {
  namespace: string;
  deployment: string;
}

/** Stops admission and the operator, so nothing refuses the finalizer removals or adds them back. */
async function stopOperator(client: KubeClient, { namespace, deployment }: Options): Promise<void> {
  for (const [kind, name] of [
    ['ValidatingWebhookConfiguration', validatingConfigurationName],
    ['MutatingWebhookConfiguration', mutatingConfigurationName],
  ] as const) {
    await client.delete({ apiVersion: 'admissionregistration.k8s.io/v1', kind, name }).catch(ignoreNotFound);
  }
  const ref = { apiVersion: 'apps/v1', kind: 'Deployment', namespace, name: deployment };
  await client.mergePatch(ref, { spec: { replicas: 0 } }).catch(ignoreNotFound);
  await waitFor(
    async () => {
      const d = await client.find<KubeObject<Deployment>>(ref);
      return (d?.status?.replicas ?? 0) === 0 ? true : undefined;
    },
    { what: `the operator Deployment ${namespace}/${deployment} to have no Pods`, timeoutMs: 120_000 },
  );
}

function ignoreNotFound(err: unknown): void {
  if (!(err instanceof ApiError && err.status === 404)) throw err;
}

/** Removes kvpool's finalizer from every object holding it, with an Event on each. */
async function releaseObjects(client: KubeClient): Promise<number> {
  const events = new EventRecorder(client, 'kvpool-uninstall');
  let released = 0;
  for (const kind of kinds) {
    const list = await client.list<KubeObject>({ apiVersion: 'worker.gpustack.ai/v1', kind });
    for (const item of list.items) {
      const obj = { ...item, apiVersion: 'worker.gpustack.ai/v1', kind };
      if (!obj.metadata.finalizers?.includes(finalizer)) continue;
      await removeFinalizer(client, obj);
      await events.record(obj, 'Warning', 'KvpoolUninstalled', uninstallMessage);
      const { namespace, name } = refOf(obj);
      objectLogger(log, kind, namespace, name).info('finalizer removed: released');
      released++;
    }
  }
  return released;
}

/** Deletes the Bindings' domain claims: without the operator nothing reads or releases them. */
async function deleteClaims(client: KubeClient, namespace: string): Promise<number> {
  const ref = { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', namespace };
  const list = await client.list<KubeObject>(ref, { labelSelector: claimSelector });
  for (const item of list.items) await client.delete({ ...ref, name: item.metadata.name! });
  return list.items.length;
}

export async function runUninstall(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      kubeconfig: { type: 'string' },
      namespace: { type: 'string' },
      deployment: { type: 'string' },
    },
  });
  if (!values.namespace || !values.deployment) {
    console.error(
      'usage: kvpool uninstall --namespace <release namespace> --deployment <operator Deployment>',
    );
    return 2;
  }
  const client = values.kubeconfig
    ? await KubeClient.fromKubeconfigFile(values.kubeconfig)
    : await KubeClient.fromDefault();
  try {
    await stopOperator(client, { namespace: values.namespace, deployment: values.deployment });
    const released = await releaseObjects(client);
    const claims = await deleteClaims(client, values.namespace);
    log.info(
      { released, claimsDeleted: claims },
      released
        ? 'uninstalled: objects released; their stores keep running until deleted'
        : 'uninstalled: no object held a kvpool finalizer',
    );
  } finally {
    await client.close();
  }
  return 0;
}
