// The local cluster as `npm start` runs it: real nodes that behave like separate machines (their own
// address, their own /var/lib), Pod networking across nodes, Services through kube-proxy and names
// through CoreDNS, `kubectl logs` and `kubectl exec`, image pulls that fail as on a cluster without
// the image — and Ctrl-C leaves nothing of it on this machine.

import assert from 'node:assert/strict';
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Container, Pod, Service, Volume } from 'kubernetes-types/core/v1.js';
import { storeImage } from '../../images/recipes.ts';
import { projectRoot } from '../../images/toolchain.ts';
import { slotOfAddress, slotTraces } from '../../local/nodes/host-network.ts';
import { kubeBinary } from '../../local/toolchain.ts';
import { KubeClient } from '../../src/kube/client.ts';
import type { KubeObject } from '../../src/kube/object.ts';
import { WaitAborted, waitFor } from '../support/wait.ts';

/** What this machine has that a cluster could leave behind: mounts, links, namespaces, rules. */
function machineState(root: string, slot: number) {
  const mounts = readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .filter((l) => l.includes(root));
  const processes = execFileSync('ps', ['-eo', 'pid,args'], { encoding: 'utf8' })
    .split('\n')
    .filter((l) => l.includes(root) && !l.includes('ps -eo'));
  const iptables = execFileSync('iptables-save', { encoding: 'utf8' })
    .split('\n')
    .filter((l) => !l.startsWith('#'))
    .join('\n');
  return { mounts, processes, iptables, traces: slotTraces(slot) };
}

describe('the local cluster on real nodes (npm start)', () => {
  const root = mkdtempSync(join(tmpdir(), 'kvpool-local-'));
  const iptablesBefore = machineState(root, 0).iptables;
  let slot = -1;
  let cli: ChildProcess;
  let client: KubeClient;
  let output = '';
  const kubeconfig = join(root, 'kubeconfig');
  const kubectl = (args: string[]) =>
    execFileSync(kubeBinary('kubectl'), ['--kubeconfig', kubeconfig, ...args], { encoding: 'utf8' });
  const pod = (
    name: string,
    nodeName: string,
    command: string,
    container: Partial<Container> = {},
    volumes: Volume[] = [],
  ): KubeObject<Pod> => ({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: 'default', labels: { app: name } },
    spec: {
      nodeName,
      terminationGracePeriodSeconds: 1,
      volumes,
      containers: [{ name: 'main', image: storeImage, command: ['sh', '-c', command], ...container }],
    },
  });
  const podNamed = (name: string) =>
    client.get<KubeObject<Pod>>({
      apiVersion: 'v1',
      kind: 'Pod',
      namespace: 'default',
      name,
    });
  const running = (name: string) =>
    waitFor(
      async () => {
        const p = await podNamed(name);
        return p.status?.containerStatuses?.[0]?.ready ? p : undefined;
      },
      { what: `${name} to run`, timeoutMs: 120_000 },
    );

  // `npm start` runs real engines: the first start after an image change imports the engine image
  // (6 GB unpacked) into the nodes' prepared store, minutes on a busy machine; later starts reuse it.
  before(
    async () => {
      cli = spawn(process.execPath, [join(projectRoot, 'local/cli.ts'), '--root', root], {
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      cli.stdout?.on('data', (d) => {
        output += d;
      });
      cli.stderr?.on('data', (d) => {
        output += d;
      });
      await waitFor(
        async () => {
          if (cli.exitCode !== null)
            throw new WaitAborted(`the local cluster exited (${cli.exitCode}):\n${output}`);
          return output.includes('kvpool ready') ? true : undefined;
        },
        { what: 'kvpool ready', timeoutMs: 1_500_000 },
      );
      client = await KubeClient.fromKubeconfigFile(kubeconfig);
      slot = slotOfAddress(new URL(client.server).hostname);
    },
    { timeout: 1_800_000 },
  );

  after(async () => {
    await client?.close();
    if (cli.exitCode === null) cli.kill('SIGKILL');
    rmSync(root, { recursive: true, force: true });
  });

  it('has two Ready nodes with their own non-loopback addresses', () => {
    const nodes = JSON.parse(kubectl(['get', 'nodes', '-o', 'json'])).items as {
      status: {
        addresses: { type: string; address: string }[];
        conditions: { type: string; status: string }[];
      };
    }[];
    assert.equal(nodes.length, 2);
    const addresses = nodes.map((n) => n.status.addresses.find((a) => a.type === 'InternalIP')!.address);
    assert.equal(new Set(addresses).size, 2);
    for (const a of addresses) assert.doesNotMatch(a, /^127\./);
    for (const n of nodes)
      assert.ok(n.status.conditions.some((c) => c.type === 'Ready' && c.status === 'True'));
  });

  it("gives each node its own /var/lib: a hostPath written on one node is that node's directory", async () => {
    for (const node of ['kvpool-node-1', 'kvpool-node-2']) {
      await client.create(
        pod(
          `writer-${node}`,
          node,
          `echo ${node} > /data/who && sleep 3600`,
          { volumeMounts: [{ name: 'data', mountPath: '/data' }], securityContext: { runAsUser: 0 } },
          [{ name: 'data', hostPath: { path: '/var/lib/kvpool-e2e', type: 'DirectoryOrCreate' } }],
        ),
      );
    }
    for (const node of ['kvpool-node-1', 'kvpool-node-2']) await running(`writer-${node}`);
    for (const node of ['kvpool-node-1', 'kvpool-node-2']) {
      const file = join(root, 'nodes', node, 'var/lib/kvpool-e2e/who');
      assert.equal(
        await waitFor(async () => readFileSync(file, 'utf8').trim() || undefined, { what: `${file}` }),
        node,
      );
    }
  });

  it('serves kubectl logs and kubectl exec through the kubelet', async () => {
    await client.create(pod('talker', 'kvpool-node-2', 'echo hello from the node; sleep 3600'));
    await running('talker');
    assert.match(kubectl(['logs', 'talker']), /hello from the node/);
    assert.equal(kubectl(['exec', 'talker', '--', 'cat', '/etc/hostname']).trim(), 'talker');
  });

  it('reaches a Service by name from a Pod on the other node (CoreDNS, kube-proxy, the Pod network)', async () => {
    await client.create(pod('web', 'kvpool-node-1', 'cd /etc && exec python3 -m http.server 8080'));
    await client.create({
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'web', namespace: 'default' },
      spec: { selector: { app: 'web' }, ports: [{ port: 80, targetPort: 8080 }] },
    } satisfies KubeObject<Service>);
    await running('web');
    const fetchScript =
      "import urllib.request; print(urllib.request.urlopen('http://web.default.svc.cluster.local/hostname', timeout=5).read().decode())";
    await client.create(pod('client', 'kvpool-node-2', 'sleep 3600'));
    await running('client');
    const answer = await waitFor(
      async () => {
        try {
          return kubectl(['exec', 'client', '--', 'python3', '-c', fetchScript]).trim() || undefined;
        } catch {
          return undefined;
        }
      },
      { what: 'the Service to answer from the other node' },
    );
    assert.equal(answer, 'web');
  });

  it('fails to pull an image no node has, as a cluster would (no substitute runs)', async () => {
    await client.create({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'missing-image', namespace: 'default' },
      spec: { containers: [{ name: 'main', image: 'registry.invalid/kvpool/nothing:1' }] },
    } satisfies KubeObject<Pod>);
    const reason = await waitFor(
      async () => {
        const r = (await podNamed('missing-image')).status?.containerStatuses?.[0]?.state?.waiting?.reason;
        return r === 'ErrImagePull' || r === 'ImagePullBackOff' ? r : undefined;
      },
      { what: 'an image pull failure', timeoutMs: 120_000 },
    );
    assert.ok(reason);
  });

  it('leaves no process, mount, network device, namespace or iptables rule behind after Ctrl-C', async () => {
    const exited = new Promise<number | null>((resolve) => cli.once('exit', (code) => resolve(code)));
    cli.kill('SIGINT');
    assert.equal(await exited, 0, output);
    assert.deepEqual(machineState(root, slot), {
      mounts: [],
      processes: [],
      iptables: iptablesBefore,
      traces: [],
    });
  });
});
