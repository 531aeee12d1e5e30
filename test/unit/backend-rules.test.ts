// KVCacheBackend admission beyond the CRD schema: each rule refuses with the field path and the fix,
// and admits the nearby legitimate edit.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { MemberGroup } from '../../src/api/kvcache-backend.ts';
import type { KVCacheBackend } from '../../src/api/types.ts';
import { type BackendAdmissionContext, validateBackend } from '../../src/webhooks/backend-rules.ts';

type Managed = NonNullable<KVCacheBackend['spec']['connection']['managed']>;

const withSetting: BackendAdmissionContext = { settingImage: 'gpustack/mirrored-mooncake:0.3.13.post1-cpu' };
const noSetting: BackendAdmissionContext = { settingImage: '' };

/** The walkthrough's Step 1 backend, edited by `edit`. */
function backend(edit: (b: KVCacheBackend, m: Managed) => void = () => {}): KVCacheBackend {
  const b: KVCacheBackend = {
    apiVersion: 'worker.gpustack.ai/v1',
    kind: 'KVCacheBackend',
    metadata: { name: 'mooncake-dram' },
    spec: {
      type: 'Mooncake',
      transport: { protocol: 'Auto' },
      connection: {
        managed: {
          leader: {
            replicas: 1,
            electionBackend: 'Kubernetes',
            memberAddressing: 'Service',
            allocationStrategy: 'FreeRatioFirst',
            multiTenancy: true,
          },
          members: [
            { nodeSelector: { 'kubernetes.io/os': 'linux' }, medium: 'DRAM', capacityPerMember: '8Gi' },
          ],
        },
      },
    },
  };
  edit(b, b.spec.connection.managed!);
  return b;
}

const group = (zone: string, extra: Partial<MemberGroup> = {}): MemberGroup => ({
  nodeSelector: { zone },
  medium: 'DRAM',
  capacityPerMember: '8Gi',
  ...extra,
});
const tier = (path: string): Partial<MemberGroup> => ({ localDisks: [{ path }] });
const withGroups = (...groups: MemberGroup[]) =>
  backend((_, m) => {
    m.members = groups;
  });

function errorsOf(obj: KVCacheBackend, old?: KVCacheBackend, ctx = withSetting): string[] {
  return validateBackend(obj, old, ctx).errors;
}

/** Exactly one error, containing every fragment. */
function refused(errors: string[], ...fragments: string[]): void {
  assert.equal(errors.length, 1, `expected one error, got ${JSON.stringify(errors)}`);
  for (const fragment of fragments)
    assert.ok(errors[0]!.includes(fragment), `${errors[0]} lacks "${fragment}"`);
}

describe('validateBackend', () => {
  it('admits the Step 1 backend, on create and on an unchanged update', () => {
    assert.deepEqual(validateBackend(backend(), undefined, withSetting), { errors: [], warnings: [] });
    assert.deepEqual(validateBackend(backend(), backend(), noSetting), { errors: [], warnings: [] });
  });

  describe('image', () => {
    it('refuses a spec.image or members[i].image that is not a reference', () => {
      refused(errorsOf(backend((b) => (b.spec.image = 'Mooncake:1'))), 'spec.image:', 'must be lowercase');
      refused(
        errorsOf(backend((_, m) => (m.members[0]!.image = 'store:-x'))),
        'spec.connection.managed.members[0].image:',
        'write it as',
      );
      assert.deepEqual(
        errorsOf(backend((b) => (b.spec.image = `registry:5000/ns/store@sha256:${'0'.repeat(64)}`))),
        [],
      );
    });

    it('refuses a managed backend with neither spec.image nor the Setting, naming both', () => {
      refused(
        errorsOf(backend(), undefined, noSetting),
        'spec.image',
        'kv-cache-backend-image',
        'set spec.image to a kvpool-store image',
      );
      assert.deepEqual(
        errorsOf(
          backend((b) => (b.spec.image = 'store:1')),
          undefined,
          noSetting,
        ),
        [],
      );
    });

    it('consults the Setting on update only when spec.image changes', () => {
      assert.deepEqual(errorsOf(backend(), backend(), noSetting), []);
      const old = backend((b) => (b.spec.image = 'store:1'));
      refused(errorsOf(backend(), old, noSetting), 'spec.image', 'kv-cache-backend-image');
    });

    it('does not need an image for an external backend', () => {
      const external = backend((b) => {
        b.spec.connection = {
          external: {
            endpoints: [
              { name: 'Client', address: 'store.example.com:50051' },
              { name: 'Admin', address: 'store.example.com:9003' },
            ],
          },
        };
      });
      assert.deepEqual(errorsOf(external, undefined, noSetting), []);
    });
  });

  describe('name', () => {
    const named = (name: string, groups = 1) =>
      backend((b, m) => {
        b.metadata.name = name;
        m.members = Array.from({ length: groups }, (_, i) => group(`z${i}`));
      });

    it('refuses a name whose rendered objects are not DNS-1035 labels', () => {
      refused(
        errorsOf(named('a'.repeat(44))),
        'metadata.name:',
        '-tenant-quota-policy',
        'at most 43 characters',
      );
      refused(errorsOf(named('store.v1')), 'metadata.name:', 'store.v1-leader', 'has no dots');
      refused(errorsOf(named('1store')), 'metadata.name:', 'starts with a letter');
    });

    it('admits the longest name that fits', () => {
      assert.deepEqual(errorsOf(named('a'.repeat(43), 32)), []);
    });
  });

  describe('leader.extraArgs', () => {
    const args = (...extraArgs: string[]) =>
      errorsOf(
        backend((_, m) => {
          m.leader.extraArgs = extraArgs;
        }),
      );

    it('refuses derived flags, each with its reason and fix', () => {
      refused(
        args('-default_kv_lease_ttl=10m', '-rpc_port=6000'),
        'spec.connection.managed.leader.extraArgs[1]: -rpc_port is derived from the backend',
        '50051',
        'remove it',
      );
      refused(args('--enable_ha=false'), 'extraArgs[0]: -enable_ha', 'electionBackend', 'remove the flag');
      refused(
        args('-allocation_strategy=random'),
        'leader.allocationStrategy',
        'set spec.connection.managed',
      );
      refused(args('-offload_on_evict'), "members' tier declaration", 'localDisks');
      refused(args('-port=1'), 'deprecated spelling of rpc_port');
      refused(args('-rpc_address=10.0.0.1'), 'Pod IP');
      refused(args('-enable_oplog=true'), 'etcd');
      refused(args('-snapshot_interval=5'), 'extraArgs[0]: -snapshot_interval', 'restore a saved index');
      refused(args('-memory_allocator=cachelib'), '-memory_allocator', 'remove it');
    });

    it('refuses the gflags flags that read more flags from a file or the environment', () => {
      for (const flag of ['-flagfile=/etc/x.flags', '--fromenv=rpc_port', '-tryfromenv=rpc_port']) {
        refused(
          args('-v=1', flag),
          `spec.connection.managed.leader.extraArgs[1]: -${flag.replace(/^-+/, '').split('=')[0]} makes the leader read further flags from a file or the environment`,
          'pass each flag as its own extraArgs entry instead',
        );
      }
    });

    it('refuses the no- prefix that switches a derived boolean off', () => {
      refused(
        args('-noenable_multi_tenants'),
        'extraArgs[0]: -noenable_multi_tenants switches',
        'multiTenancy',
      );
    });

    it('refuses malformed entries', () => {
      const errors = args('rpc_port=1', '-', '---x', '-=1', '-rpc port=1', '-a -b');
      assert.equal(errors.length, 6);
      for (const [i, error] of errors.entries()) {
        assert.ok(error.startsWith(`spec.connection.managed.leader.extraArgs[${i}]:`), error);
        assert.match(error, /not one flag token; write it as -key or -key=value/);
      }
    });

    it('admits allowed and unknown flags', () => {
      assert.deepEqual(
        args('-default_kv_lease_ttl=10m', '--metrics_host=::', '-eviction_ratio=0.1', '-v'),
        [],
      );
    });
  });

  it('refuses leader.extraEnv names the operator renders', () => {
    const env = (name: string) =>
      errorsOf(
        backend((_, m) => {
          m.leader.extraEnv = [{ name: 'TZ', value: 'UTC' }, { name }];
        }),
      );
    refused(
      env('KUBERNETES_POD_IP'),
      'spec.connection.managed.leader.extraEnv[1].name: KUBERNETES_POD_IP',
      'remove this entry',
    );
    assert.deepEqual(env('GLOG_v'), []);
  });

  describe('leader.multiTenancy', () => {
    const off = backend((_, m) => (m.leader.multiTenancy = false));
    const claimed = (count: number) =>
      backend((b) => {
        b.status = {
          usedBy: Array.from({ length: count }, (_, i) => ({
            kind: 'KVCachePool',
            namespace: '',
            name: `p${i}`,
          })),
        };
      });

    it('refuses turning it off while the old object is in use, naming up to 20 claimants', () => {
      const errors = errorsOf(off, claimed(23));
      refused(
        errors,
        'spec.connection.managed.leader.multiTenancy:',
        'KVCachePool/p0, ',
        'KVCachePool/p19 and 3 more',
      );
      assert.ok(!errors[0]!.includes('KVCachePool/p20'));
      assert.match(errors[0]!, /move them to another backend first, or keep multiTenancy true/);
    });

    it('admits turning it off when unused, and defaults an omitted value to on', () => {
      assert.deepEqual(errorsOf(off, claimed(0)), []);
      assert.deepEqual(errorsOf(off, undefined), []);
      const omitted = backend((_, m) => delete m.leader.multiTenancy);
      refused(errorsOf(off, Object.assign(omitted, { status: claimed(1).status })), 'KVCachePool/p0');
    });
  });

  describe('members', () => {
    const edited = (edit: (g: MemberGroup) => void) =>
      validateBackend(
        backend((_, m) => edit(m.members[0]!)),
        undefined,
        withSetting,
      );
    const p = 'spec.connection.managed.members[0]';

    it('refuses nodeSelector keys and values that are not label syntax', () => {
      refused(
        edited((g) => (g.nodeSelector = { 'bad key': 'x' })).errors,
        `${p}.nodeSelector: key "bad key"`,
        "node label's exact key",
      );
      refused(edited((g) => (g.nodeSelector = { 'Example.com/zone': 'a' })).errors, 'not a label key');
      refused(
        edited((g) => (g.nodeSelector = { zone: '-a' })).errors,
        `${p}.nodeSelector["zone"]: value "-a"`,
        'exact value',
      );
      assert.deepEqual(
        edited((g) => (g.nodeSelector = { 'node.example.com/kv_cache.tier': '', a: 'B-1.x_y' })).errors,
        [],
      );
    });

    it('refuses extraArgs that are not -key=value or that the operator derives', () => {
      refused(
        edited((g) => (g.extraArgs = ['-foo'])).errors,
        `${p}.extraArgs[0]: "-foo" is not a -key=value entry`,
      );
      refused(
        edited((g) => (g.extraArgs = ['--global_segment_size=1'])).errors,
        'global_segment_size is derived from members[].capacityPerMember',
        'set members[].capacityPerMember instead',
      );
      refused(
        edited((g) => (g.extraArgs = ['-ssd_offload_path=/x'])).errors,
        `${p}.extraArgs[0]`,
        'localDisks',
      );
      assert.deepEqual(edited((g) => (g.extraArgs = ['-eviction_high_watermark_ratio=0.9'])).errors, []);
    });

    it('refuses extraEnv names the operator renders, including every MOONCAKE_OFFLOAD_*', () => {
      refused(
        edited((g) => (g.extraEnv = [{ name: 'MC_TE_METRIC', value: '0' }])).errors,
        `${p}.extraEnv[0].name: MC_TE_METRIC`,
        'remove this entry',
      );
      refused(
        edited((g) => (g.extraEnv = [{ name: 'MOONCAKE_OFFLOAD_BUCKET_KEYS_LIMIT' }])).errors,
        'members[].localDisks',
      );
      refused(
        edited((g) => (g.extraEnv = [{ name: 'MOONCAKE_OFFLOAD_ANYTHING_NEW' }])).errors,
        'MOONCAKE_OFFLOAD_ANYTHING_NEW',
      );
      refused(
        edited((g) => (g.extraEnv = [{ name: 'MOONCAKE_CONFIG_PATH', value: '/etc/member.json' }])).errors,
        `${p}.extraEnv[0].name: MOONCAKE_CONFIG_PATH makes the member read its whole configuration from a file`,
        'remove this entry',
      );
      assert.deepEqual(edited((g) => (g.extraEnv = [{ name: 'MC_LOG_LEVEL', value: 'info' }])).errors, []);
    });

    it('warns, without refusing, about fabricInterfaceCount off RDMA/EFA', () => {
      const tcp = edited((g) => (g.fabricInterfaceCount = 2));
      assert.deepEqual(tcp.errors, []);
      refused(tcp.warnings, `${p}.fabricInterfaceCount:`, 'protocol is Auto', 'RDMA or EFA');
      const rdma = edited((g) => {
        g.fabricInterfaceCount = 2;
        g.transport = { protocol: 'RDMA' };
      });
      assert.deepEqual(rdma, { errors: [], warnings: [] });
      const inherited = validateBackend(
        backend((b, m) => {
          b.spec.transport = { protocol: 'EFA' };
          m.members[0]!.fabricInterfaceCount = 4;
        }),
        undefined,
        withSetting,
      );
      assert.deepEqual(inherited.warnings, []);
    });
  });

  describe('a stored backend that a later rule would refuse', () => {
    const stored = backend((b, m) => {
      b.metadata.finalizers = ['worker.gpustack.ai/cleanup'];
      b.spec.image = 'Mooncake:1';
      m.leader.extraArgs = ['-flagfile=/etc/x.flags'];
    });

    it('never refuses the metadata-only update that removes the finalizer', () => {
      const released = { ...stored, metadata: { ...stored.metadata, finalizers: [] } };
      assert.deepEqual(validateBackend(released, stored, noSetting), { errors: [], warnings: [] });
    });

    it('refuses its next spec update, naming every rule it breaks', () => {
      const resized = backend((b, m) => {
        b.spec.image = 'Mooncake:1';
        m.leader.extraArgs = ['-flagfile=/etc/x.flags'];
        m.members[0]!.capacityPerMember = '16Gi';
      });
      const errors = errorsOf(resized, stored);
      assert.equal(errors.length, 2, JSON.stringify(errors));
      assert.match(errors[0]!, /^spec\.image:/);
      assert.match(errors[1]!, /extraArgs\[0\]: -flagfile/);
    });
  });

  it('applies the position and disk-tier rules on update (see backend-rules-positions.test.ts)', () => {
    const [A, T] = [group('a'), group('t', tier('/var/lib/kvcache'))];
    const errors = errorsOf(withGroups(T, A), withGroups(A, T));
    assert.equal(errors.length, 3, JSON.stringify(errors));
    assert.ok(
      errors[0]!.startsWith('spec.connection.managed.members[0]: the groups at members[0] and members[1]'),
    );
    assert.deepEqual(errorsOf(withGroups(A), withGroups(A, T)), []);
  });
});
