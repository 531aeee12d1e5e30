// Who may reach a managed store: the leader's RPC port and the members' transfer ports only from the
// namespaces holding a Binding to the store and from the store's own Pods, the admin port only from
// the operator's Pods. Goldens pin the exact policies; regenerate with UPDATE_GOLDEN=1 and review.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { NetworkPolicySpec } from 'kubernetes-types/networking/v1.js';
import type { KVCacheBackend } from '../../src/api/types.ts';
import { renderBackend } from '../../src/controllers/backend/render.ts';
import { storeNetworkPolicies } from '../../src/controllers/backend/render-network.ts';
import { bindingWakes } from '../../src/controllers/backend/watches.ts';
import type { KubeObject } from '../../src/kube/object.ts';
import { operatorPodLabels } from '../../src/vocabulary/store-objects.ts';
import { backend, binding, group, pool } from '../builders/index.ts';
import { goldenTests } from './golden.ts';

const ctx = { namespace: 'gpustack-system', defaultImage: 'kvpool/kvpool-store:test' };
const store = { 'app.kubernetes.io/name': 'kv-cache-backend', 'app.kubernetes.io/instance': 'mooncake-dram' };
const operator = {
  namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'gpustack-system' } },
  podSelector: {
    matchLabels: { 'app.kubernetes.io/name': 'kvpool', 'app.kubernetes.io/component': 'operator' },
  },
};
const bound = (namespaces: string[]) => ({
  namespaceSelector: {
    matchExpressions: [{ key: 'kubernetes.io/metadata.name', operator: 'In', values: namespaces }],
  },
});
const transfer = [
  { protocol: 'TCP', port: 15000, endPort: 17000 },
  { protocol: 'TCP', port: 12300, endPort: 14300 },
];

function policies(boundNamespaces: string[], b: KVCacheBackend = backend()) {
  b.metadata = { ...b.metadata, uid: 'uid-1' };
  const byName = new Map(
    renderBackend(b, { ...ctx, boundNamespaces }).networkPolicies.map((p) => [p.metadata.name, p]),
  );
  const spec = (name: string) => (byName.get(name) as KubeObject<{ spec: NetworkPolicySpec }>)?.spec;
  return { leader: spec('mooncake-dram-leader'), members: spec('mooncake-dram-member') };
}

describe('store NetworkPolicies', () => {
  it('admit the leader RPC port from the bound namespaces and the store’s own Pods, the admin port from the operator alone', () => {
    const { leader } = policies(['team-b', 'team-a']);
    assert.deepEqual(leader?.policyTypes, ['Ingress']);
    assert.deepEqual(leader?.ingress, [
      {
        from: [bound(['team-a', 'team-b']), { podSelector: { matchLabels: store } }],
        ports: [{ protocol: 'TCP', port: 50051 }],
      },
      { from: [operator], ports: [{ protocol: 'TCP', port: 9003 }] },
    ]);
  });

  it('admit the members’ transfer ports from the bound namespaces and the store’s own Pods, nothing else', () => {
    const { members } = policies(['team-a'], backend('mooncake-dram', { groups: [group(), group()] }));
    assert.deepEqual(members?.policyTypes, ['Ingress']);
    assert.deepEqual(members?.ingress, [
      { from: [bound(['team-a']), { podSelector: { matchLabels: store } }], ports: transfer },
    ]);
  });

  it('admit the operator alone to a tier member’s status port (GET /tier), one port per tier group', () => {
    const disk = { path: '/var/lib/kvcache', capacity: '100Gi' };
    const { members } = policies(
      ['team-a'],
      backend('mooncake-dram', {
        groups: [group(), group({ localDisks: [disk] }), group({ localDisks: [disk] })],
      }),
    );
    assert.deepEqual(members?.ingress, [
      { from: [bound(['team-a']), { podSelector: { matchLabels: store } }], ports: transfer },
      {
        from: [operator],
        ports: [
          { protocol: 'TCP', port: 9111 },
          { protocol: 'TCP', port: 9112 },
        ],
      },
    ]);
  });

  it('admit only the store’s own Pods (and the operator on the admin port) while no namespace holds a Binding', () => {
    const { leader, members } = policies([]);
    assert.deepEqual(leader?.ingress?.[0]?.from, [{ podSelector: { matchLabels: store } }]);
    assert.deepEqual(leader?.ingress?.[1]?.from, [operator]);
    assert.deepEqual(members?.ingress, [
      { from: [{ podSelector: { matchLabels: store } }], ports: transfer },
    ]);
  });
});

const withUid = (b: KVCacheBackend) => ({ ...b, metadata: { ...b.metadata, uid: `uid-${b.metadata.name}` } });
const goldens: Record<string, { backend: KVCacheBackend; bound: string[] }> = {
  'no-binding': { backend: withUid(backend()), bound: [] },
  'two-namespaces': { backend: withUid(backend()), bound: ['team-b', 'team-a', 'team-b'] },
  'two-member-groups': {
    backend: withUid(backend('mooncake-tiers', { groups: [group(), group({ medium: 'VRAM' })] })),
    bound: ['team-a'],
  },
  'disk-tier-group': {
    backend: withUid(
      backend('mooncake-disk', {
        groups: [group({ localDisks: [{ path: '/var/lib/kvcache', capacity: '100Gi' }] })],
      }),
    ),
    bound: ['team-a'],
  },
};

describe('store NetworkPolicies goldens', () => {
  goldenTests(new URL('./golden/network-policies/', import.meta.url), goldens, (c) =>
    storeNetworkPolicies(c.backend, c.bound, { namespace: 'gpustack-system', podLabels: operatorPodLabels }),
  );
});

describe('a Binding coming or going', () => {
  const pools = { get: (name: string) => (name === 'shared-dram' ? pool('shared-dram') : undefined) };
  const wakes = bindingWakes(pools);

  it('wakes the backend of its pool when it is created or deleted', () => {
    assert.deepEqual(wakes(binding('team-a', 'b'), 'add'), ['mooncake-dram']);
    assert.deepEqual(wakes(binding('team-a', 'b'), 'delete'), ['mooncake-dram']);
  });

  it('wakes nothing on an update (pool and namespace never change) or for a pool that does not exist', () => {
    assert.deepEqual(wakes(binding('team-a', 'b'), 'update', binding('team-a', 'b')), []);
    assert.deepEqual(wakes(binding('team-a', 'b', { pool: 'missing' }), 'add'), []);
  });
});
