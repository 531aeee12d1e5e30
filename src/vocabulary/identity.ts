// What marks kvpool on the objects it touches: the API version of its kinds, the finalizer that holds
// them until their store side is released, and one field manager per writer.

export const workerApiVersion = 'worker.gpustack.ai/v1';

export const finalizer = 'worker.gpustack.ai/kvpool-protection';

/** Field managers: one per writer. */
export const fieldManagers = {
  controller: 'kvpool-controller',
  status: 'kvpool-controller/status',
  /** A role's replica count alone, while its replicas are kept as they run (no cache connection). */
  replicas: 'kvpool-controller/replicas',
} as const;
