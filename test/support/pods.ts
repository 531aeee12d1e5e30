// Reads of the Pods the operator's Deployments and DaemonSets run, for the tests on a cluster with kubelets.
import type { KubeClient } from '../../src/kube/client.ts';
import type { KubeObject } from '../../src/kube/object.ts';

type PodWithConditions = KubeObject & { status?: { conditions?: { type: string; status: string }[] } };

/** The Pods in `namespace` that `labelSelector` matches. */
export async function podsMatching<P extends KubeObject>(
  client: KubeClient,
  namespace: string,
  labelSelector: string,
): Promise<P[]> {
  return (await client.list<P>({ apiVersion: 'v1', kind: 'Pod', namespace }, { labelSelector })).items;
}

/** The replicas of ModelDeployment `md` in team-a that are Ready and not being deleted. */
export async function readyReplicas<P extends PodWithConditions>(
  client: KubeClient,
  md: string,
): Promise<P[]> {
  return (await podsMatching<P>(client, 'team-a', `app.kubernetes.io/instance=${md}`)).filter(
    (p) =>
      p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') &&
      !p.metadata.deletionTimestamp,
  );
}
