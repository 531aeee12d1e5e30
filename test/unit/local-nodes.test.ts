import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parse } from 'yaml';
import { clusterAddressing, maxSlots } from '../../local/nodes/addressing.ts';
import {
  cniConfig,
  containerdConfig,
  kubeletConfig,
  kubeProxyConfig,
} from '../../local/nodes/node-config.ts';
import { nodePlan } from '../builders/index.ts';

const plan = nodePlan();

describe('local cluster addressing', () => {
  it('gives a slot one /16 of 100.64.0.0/10: nodes on .255.0/24, Pods below .128, Services above', () => {
    const a = clusterAddressing(3);
    assert.equal(a.hostAddress, '100.67.255.1');
    assert.equal(a.clusterCidr, '100.67.0.0/17');
    assert.equal(a.serviceCidr, '100.67.128.0/20');
    assert.equal(a.kubernetesServiceIp, '100.67.128.1');
    assert.equal(a.dnsServiceIp, '100.67.128.10');
    assert.deepEqual(a.node(1), {
      address: '100.67.255.11',
      netns: 'kvpool3-n1',
      hostVeth: 'kvpool3h1',
      nodeVeth: 'kvpool3n1',
    });
  });

  it('keeps every interface name within the kernel limit of 15 characters, and stays inside 100.64.0.0/10', () => {
    const last = clusterAddressing(maxSlots - 1);
    assert.ok(last.bridge.length <= 15 && last.node(200).hostVeth.length <= 15);
    assert.match(last.hostAddress, /^100\.127\./);
    assert.throws(() => clusterAddressing(maxSlots), /slot 64 is not in 0\.\.63/);
  });
});

describe('local node configuration', () => {
  it('containerd: the node-local state, runc and the CNI plugins from the cache, OOM scores never below its own', () => {
    const toml = containerdConfig(plan);
    assert.match(toml, /root = "\/var\/lib\/containerd"/);
    assert.match(toml, /BinaryName = "\/cache\/runc"/);
    assert.match(toml, /bin_dirs = \["\/cache\/cni"\]/);
    assert.match(toml, /conf_dir = "\/tmp\/c\/nodes\/kvpool-node-1\/etc\/cni\/net.d"/);
    assert.match(toml, /restrict_oom_score_adj = true/);
    assert.match(toml, /sandbox = "registry.k8s.io\/pause:3.10.1"/);
  });

  it('kubelet: its address, cgroup root, cluster DNS, and eviction thresholds that one shared disk never trips', () => {
    const c = parse(kubeletConfig(plan));
    assert.equal(c.address, '100.67.255.10');
    assert.equal(c.cgroupRoot, '/kvpool/3/kvpool-node-1');
    assert.deepEqual(c.clusterDNS, ['100.67.128.10']);
    assert.equal(c.cgroupDriver, 'cgroupfs');
    assert.equal(c.authorization.mode, 'Webhook');
    assert.equal(c.evictionHard['nodefs.available'], '1%');
  });

  it('kube-proxy: iptables mode for the cluster range, machine-wide conntrack limits left alone', () => {
    const c = parse(kubeProxyConfig(plan));
    assert.equal(c.mode, 'iptables');
    assert.equal(c.clusterCIDR, '100.67.0.0/17');
    assert.equal(c.conntrack.maxPerCore, 0);
  });

  it('CNI: a bridge with the node’s Pod range and host ports', () => {
    const c = JSON.parse(cniConfig('100.67.1.0/24'));
    assert.deepEqual(
      c.plugins.map((p: { type: string }) => p.type),
      ['bridge', 'portmap'],
    );
    assert.equal(c.plugins[0].ipam.ranges[0][0].subnet, '100.67.1.0/24');
    assert.equal(c.plugins[0].ipMasq, false);
  });
});
