// The winning replica marks its own Pod `mooncake.io/store-role=leader`, as Mooncake's own Lease backend
// does, so people and tools can tell the leader from the standbys at a glance.
import type { KubeClient } from '../kube/client.ts';
import type { Logger } from '../kube/log.ts';

export const storeRoleLabel = 'mooncake.io/store-role';

export interface PodIdentity {
  name: string | undefined;
  namespace: string | undefined;
  ip: string | undefined;
}

export function podFromEnv(env: NodeJS.ProcessEnv = process.env): PodIdentity {
  return {
    name: env.KUBERNETES_POD_NAME || undefined,
    namespace: env.KUBERNETES_POD_NAMESPACE || undefined,
    ip: env.KUBERNETES_POD_IP || undefined,
  };
}

/** Sets (`leader`) or removes (null) the role label; a failure is logged, never fatal. */
export async function setPodRole(
  client: KubeClient,
  pod: PodIdentity,
  role: 'leader' | null,
  logger: Logger,
): Promise<void> {
  if (!pod.name || !pod.namespace) {
    logger.warn('KUBERNETES_POD_NAME or KUBERNETES_POD_NAMESPACE is unset; the Pod role label is not set');
    return;
  }
  const ref = { apiVersion: 'v1', kind: 'Pod', namespace: pod.namespace, name: pod.name };
  try {
    await client.mergePatch(ref, { metadata: { labels: { [storeRoleLabel]: role } } });
    if (role)
      logger.info({ pod: `${pod.namespace}/${pod.name}` }, `labeled the Pod ${storeRoleLabel}=${role}`);
  } catch (err) {
    logger.warn(
      { err: String(err), pod: `${pod.namespace}/${pod.name}` },
      'could not update the Pod role label',
    );
  }
}
