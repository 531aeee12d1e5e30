// KVCachePoolBindings: one in a team namespace on `shared-dram`, its domain named after it by default.
import type { KVCachePoolBinding } from '../../src/api/types.ts';
import { deletedAt, v1 } from './api.ts';

export interface BindingOptions {
  pool?: string;
  ceiling?: string;
  /** Defaults to `<ns>-<name>`; null leaves the name out, which the store reads as `default`. */
  domain?: string | null;
  blockSize?: number;
  dtype?: string;
  deleting?: boolean;
  annotations?: Record<string, string>;
  status?: KVCachePoolBinding['status'];
}

export function binding(ns: string, name: string, opts: BindingOptions = {}): KVCachePoolBinding {
  const domain = opts.domain === null ? {} : { name: opts.domain ?? `${ns}-${name}` };
  return {
    apiVersion: v1,
    kind: 'KVCachePoolBinding',
    metadata: {
      namespace: ns,
      name,
      ...(opts.deleting ? { deletionTimestamp: deletedAt } : {}),
      ...(opts.annotations ? { annotations: opts.annotations } : {}),
    },
    spec: {
      poolRef: { name: opts.pool ?? 'shared-dram' },
      quota: { ceiling: opts.ceiling ?? '8Gi' },
      domain: { ...domain, blockSize: opts.blockSize ?? 16, dtype: opts.dtype ?? 'bfloat16' },
    },
    ...(opts.status ? { status: opts.status } : {}),
  };
}
