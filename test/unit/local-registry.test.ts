// The local cluster's registry as its nodes and skopeo see it: containerd sends pulls for its address
// over plain HTTP (and nowhere else), the registry serves where the nodes look, skopeo is told it is
// plain HTTP.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parse } from 'yaml';
import { containerdConfig, registryHosts, registryHostsDir } from '../../local/nodes/node-config.ts';
import { registriesConf, registryConfig } from '../../local/registry.ts';
import { nodePlan } from '../builders/index.ts';

const registry = '100.67.255.1:25000';
const plan = nodePlan({ registries: [registry] });

describe('the local registry', () => {
  it('is where containerd looks up registry hosts, and each node pulls from it over plain HTTP', () => {
    assert.equal(registryHostsDir(plan), '/tmp/c/nodes/kvpool-node-1/etc/containerd/certs.d');
    assert.match(
      containerdConfig(plan),
      /\[plugins\."io\.containerd\.cri\.v1\.images"\.registry\]\n\s+config_path = "\/tmp\/c\/nodes\/kvpool-node-1\/etc\/containerd\/certs\.d"/,
    );
    const hosts = registryHosts(plan);
    assert.deepEqual(Object.keys(hosts), [registry]);
    assert.match(hosts[registry]!, /^server = "http:\/\/100\.67\.255\.1:25000"$/m);
    assert.match(
      hosts[registry]!,
      /^\[host\."http:\/\/100\.67\.255\.1:25000"\]\n\s+capabilities = \["pull", "resolve"\]$/m,
    );
    assert.deepEqual(registryHosts({ ...plan, registries: undefined }), {});
  });

  it('serves on the address the nodes are given, storing under its own directory', () => {
    const c = parse(registryConfig(registry, '/tmp/c/registry/storage'));
    assert.equal(c.version, 0.1);
    assert.equal(c.http.addr, registry);
    assert.equal(c.storage.filesystem.rootdirectory, '/tmp/c/registry/storage');
  });

  it('tells skopeo the registry is plain HTTP, and only that registry', () => {
    assert.equal(registriesConf(registry), `[[registry]]\nlocation = "${registry}"\ninsecure = true\n`);
  });
});
