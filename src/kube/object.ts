// Kubernetes objects as the API serves them in JSON (timestamps stay strings). The kinds themselves
// are kubernetes-types'; KubeObject<T> is one of them as read from or sent to the apiserver, where
// apiVersion, kind and metadata are always present.
import type { ObjectMeta } from 'kubernetes-types/meta/v1.js';

export type { ObjectMeta, OwnerReference } from 'kubernetes-types/meta/v1.js';

/** Any object (`KubeObject`), or one kind of them (`KubeObject<Pod>`, `KubeObject<Deployment>`). */
export type KubeObject<T extends object = object> = T & {
  apiVersion: string;
  kind: string;
  metadata: ObjectMeta;
};
