// What a backend's children are rendered against besides the backend itself: a leaf, so the renderers
// of each child and the function that gathers them all can share it.
export interface BackendRenderContext {
  /** The operator namespace every child lives in. */
  namespace: string;
  /** The `kv-cache-backend-image` Setting, resolved by the caller. */
  defaultImage: string;
  /** The `kv-cache-image-pull-secrets` Setting's Secret names: every store Pod pulls with them. */
  pullSecrets?: readonly string[];
  /** The namespaces holding a Binding to a pool on this store: their Pods may reach its RPC and transfer ports. */
  boundNamespaces: readonly string[];
  /** Holds the leader at this many replicas (raising HA from an unelected template goes through 1 first). */
  leaderReplicasOverride?: number;
  /** The leader Pods the Lease asks not to lead (a rollout or a drain hands leadership over). */
  leaderStepDown?: string[];
}
