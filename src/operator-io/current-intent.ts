// Deleting children (member Pods, a member group's DaemonSet, a role's Deployment) cannot be undone,
// and the parent in the cache can be older than the children it is compared with: its cache follows
// another watch, or this replica has just taken over from a leader that already acted on a newer spec.
// Before such a delete, the parent's generation is confirmed against the apiserver, once per pass.
import { type KubeClient, refOf } from '../kube/client.ts';
import type { KubeObject } from '../kube/object.ts';

/** Resolves true when the apiserver holds the same spec generation as `parent`; asks at most once. */
export function intentConfirmation(client: KubeClient, parent: KubeObject): () => Promise<boolean> {
  let answer: Promise<boolean> | undefined;
  return () => {
    answer ??= client
      .find(refOf(parent))
      .then((live) => live !== undefined && live.metadata.generation === parent.metadata.generation);
    return answer;
  };
}
