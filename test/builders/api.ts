// What every kvpool object a test builds shares: its API version, and the deletion time of one being deleted.
export const v1 = 'worker.gpustack.ai/v1';
export const deletedAt = '2025-01-01T00:00:00Z';
