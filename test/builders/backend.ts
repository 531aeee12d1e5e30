// KVCacheBackends as tests build them: the walkthrough's managed DRAM backend, an external one on a store
// the test started, a disk-tier one, or any managed connection a test spells out.
import type { KVCacheBackendSpec, MemberGroup } from '../../src/api/kvcache-backend.ts';
import type { KVCacheBackend } from '../../src/api/types.ts';
import type { MooncakeStore } from '../support/mooncake-store.ts';
import { v1 } from './api.ts';

export type ManagedConnection = NonNullable<KVCacheBackendSpec['connection']['managed']>;

export const group = (over: Partial<MemberGroup> = {}): MemberGroup => ({
  nodeSelector: { 'kubernetes.io/os': 'linux' },
  medium: 'DRAM',
  capacityPerMember: '8Gi',
  ...over,
});

/** A backend running `managed`, with `spec`'s other fields (type, image, transport) before it. */
export function managedBackend(
  name: string,
  managed: ManagedConnection,
  spec: Omit<KVCacheBackendSpec, 'connection'> = {},
): KVCacheBackend {
  return {
    apiVersion: v1,
    kind: 'KVCacheBackend',
    metadata: { name },
    spec: { ...spec, connection: { managed } },
  };
}

/** A managed backend with one DRAM member group per entry of `groups`. */
export function backend(
  name = 'mooncake-dram',
  opts: {
    groups?: MemberGroup[];
    multiTenancy?: boolean;
    protocol?: 'Auto' | 'TCP' | 'RDMA';
    leaderReplicas?: number;
  } = {},
): KVCacheBackend {
  return managedBackend(
    name,
    {
      leader: { replicas: opts.leaderReplicas ?? 1, multiTenancy: opts.multiTenancy ?? true },
      members: opts.groups ?? [group()],
    },
    { type: 'Mooncake', transport: { protocol: opts.protocol ?? 'Auto' } },
  );
}

/** Where an external backend's Client and Admin endpoints are: a store started by the test, or none. */
export type StoreAddresses = Pick<MooncakeStore, 'rpcAddress' | 'adminAddress'>;

/** Addresses nothing listens on, for decisions that only read the spec. */
export const exampleStore: StoreAddresses = {
  rpcAddress: 'store.example:50051',
  adminAddress: 'store.example:9003',
};

/** A backend on `store`; `adminAddress` puts something (a proxy) in front of its admin endpoint. */
export function externalBackend(
  name = 'mooncake-ext',
  store: StoreAddresses = exampleStore,
  adminAddress = store.adminAddress,
): KVCacheBackend {
  return {
    apiVersion: v1,
    kind: 'KVCacheBackend',
    metadata: { name },
    spec: {
      connection: {
        external: {
          endpoints: [
            { name: 'Client', address: store.rpcAddress },
            { name: 'Admin', address: adminAddress },
          ],
        },
      },
    },
  };
}

export const tierPath = '/var/lib/kvcache-warm';

/** A backend whose members on every node keep a 1Gi write-through tier at `tierPath`. */
export function tierBackend(
  name: string,
  options: { replicas: number; capacityPerMember: string; foreignContent?: 'Refuse' | 'Remove' },
): KVCacheBackend {
  const { replicas, capacityPerMember, foreignContent } = options;
  return managedBackend(name, {
    // No tenant ledger, so no Binding holds the deletion.
    leader: { replicas, multiTenancy: false },
    members: [
      group({
        capacityPerMember,
        localDisks: [
          {
            path: tierPath,
            capacity: '1Gi',
            offload: 'WriteThrough',
            ...(foreignContent ? { foreignContent } : {}),
          },
        ],
      }),
    ],
  });
}
