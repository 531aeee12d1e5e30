// The local cluster's service proxy and the node agent's life cycle: a Service is reachable by name from
// inside a Pod and balances over its ready backends, stops sending to a backend that turned unready,
// new Services reach running Pods' /etc/hosts in place, and Pods deleted while the node agent was down
// are cleaned up when it starts again, Pods of other nodes left alone.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { KubeObject } from '../../src/kube/object.ts';
import type { Pod } from '../../src/local/node-agent/pod-types.ts';
import { podDirName } from '../../src/local/node-agent/sandbox.ts';
import { ensureNamespace, until } from '../support/cluster.ts';
import { isReady, type LocalNodes, podRef, startLocalNodes, untilPod } from '../support/node-agent.ts';

// biome-ignore lint/suspicious/noExplicitAny: test-only access to arbitrary object fields
type Loose = any;
const ns = 'svc-test';
const shell = 'kvpool.local/shell';

describe('the service proxy and the node agent across restarts', () => {
  let nodes: LocalNodes;
  const podDir = (pod: Pod) => join(nodes.root, 'pods', podDirName(pod));
  const create = (obj: Loose) => nodes.client.create(obj as KubeObject);

  before(async () => {
    nodes = await startLocalNodes();
    await ensureNamespace(nodes.client, ns);
  });
  after(async () => {
    await nodes?.stop();
  });

  it('reaches a Service by name from a Pod, over both ready backends, and drops one that turns unready', async () => {
    await create({
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'backend', namespace: ns },
      spec: {
        replicas: 2,
        selector: { matchLabels: { app: 'backend' } },
        template: {
          metadata: { labels: { app: 'backend' } },
          spec: {
            volumes: [{ name: 'www', emptyDir: {} }],
            containers: [
              {
                name: 'web',
                image: shell,
                command: [
                  'sh',
                  '-c',
                  'echo $(POD_NAME) > /www/name; echo ok > /www/ready; ' +
                    'exec python3 -m http.server --bind $(POD_IP) 8080 -d /www',
                ],
                env: [
                  { name: 'POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
                  { name: 'POD_IP', valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } },
                ],
                ports: [{ name: 'http', containerPort: 8080 }],
                readinessProbe: {
                  httpGet: { path: '/ready', port: 'http' },
                  periodSeconds: 1,
                  failureThreshold: 1,
                },
                volumeMounts: [{ name: 'www', mountPath: '/www' }],
              },
            ],
          },
        },
      },
    });
    await create({
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'backend', namespace: ns },
      spec: { selector: { app: 'backend' }, ports: [{ name: 'http', port: 80, targetPort: 'http' }] },
    });
    await create({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'client', namespace: ns },
      spec: {
        volumes: [{ name: 'out', emptyDir: {} }],
        containers: [
          {
            name: 'client',
            image: shell,
            command: [
              'sh',
              '-c',
              `getent hosts backend.${ns}.svc > /out/resolved; ` +
                `while true; do curl -s -m 2 http://backend.${ns}.svc/name >> /out/responses || echo FAIL >> /out/responses; sleep 0.05; done`,
            ],
            volumeMounts: [{ name: 'out', mountPath: '/out' }],
          },
        ],
      },
    });
    const backends = await until('two ready backends', async () => {
      const list = await nodes.client.list<Pod>(
        { apiVersion: 'v1', kind: 'Pod', namespace: ns },
        { labelSelector: 'app=backend' },
      );
      return list.items.length === 2 && list.items.every(isReady) ? list.items : undefined;
    });
    const names = backends.map((p) => p.metadata.name!).sort();
    const client = await untilPod(nodes, ns, 'client', 'Ready', (p) => (isReady(p) ? p : undefined));
    const out = join(podDir(client), 'volumes', 'out');
    const responses = () => readFileSync(join(out, 'responses'), 'utf8').split('\n').filter(Boolean);
    await until('responses from both backends', () => {
      const seen = new Set(responses());
      return names.every((n) => seen.has(n)) ? true : undefined;
    });
    const resolved = readFileSync(join(out, 'resolved'), 'utf8');
    assert.equal(resolved.split(/\s+/)[0], nodes.proxy.addressOf(ns, 'backend'));
    assert.match(resolved.split(/\s+/)[0]!, /^127\.254\./);

    // The first backend turns unready; once its endpoint says so, every request goes to the other.
    const [gone, stays] = backends;
    rmSync(join(podDir(gone!), 'volumes', 'www', 'ready'));
    await until('the EndpointSlice to mark the backend unready', async () => {
      const slices = await nodes.client.list<Loose>(
        { apiVersion: 'discovery.k8s.io/v1', kind: 'EndpointSlice', namespace: ns },
        { labelSelector: 'kubernetes.io/service-name=backend' },
      );
      const eps = slices.items.flatMap((s: Loose) => s.endpoints ?? []);
      const ep = eps.find((e: Loose) => e.targetRef?.name === gone!.metadata.name);
      return ep && ep.conditions.ready === false ? true : undefined;
    });
    // The proxy learns it from its own EndpointSlice watch: wait for a run of answers from the other.
    await until('20 answers in a row from the remaining backend', () => {
      const r = responses();
      return r.length >= 20 && r.slice(-20).every((n) => n === stays!.metadata.name) ? true : undefined;
    });
    writeFileSync(join(out, 'responses'), '');
    const later = await until('20 more responses', () =>
      responses().length >= 20 ? responses() : undefined,
    );
    assert.deepEqual([...new Set(later)], [stays!.metadata.name]);
  });

  it('adds a new Service to running Pods’ /etc/hosts in place', async () => {
    const client = await nodes.client.get<Pod>(podRef(ns, 'client'));
    const hosts = join(podDir(client), 'etc-hosts');
    const inode = statSync(hosts).ino;
    await create({
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'later', namespace: ns },
      spec: { selector: { app: 'none' }, ports: [{ port: 9000 }] },
    });
    const text = await until('the new Service in the hosts file', () => {
      const t = readFileSync(hosts, 'utf8');
      return t.includes(`later later.${ns} later.${ns}.svc later.${ns}.svc.cluster.local`) ? t : undefined;
    });
    assert.equal(statSync(hosts).ino, inode);
    assert.match(text, new RegExp(`^${client.status!.podIP}\\s+client$`, 'm'));
    // Another namespace's Service resolves by its qualified names only.
    assert.match(
      text,
      /\skubernetes\.default kubernetes\.default\.svc kubernetes\.default\.svc\.cluster\.local$/m,
    );
    assert.doesNotMatch(text, /\skubernetes kubernetes\.default/);
  });

  it('cleans up Pods deleted while the node agent was down, leaving other nodes’ Pods alone', async () => {
    const pod = (name: string, nodeName: string) =>
      create({
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name, namespace: ns },
        spec: { nodeName, containers: [{ name: 'app', image: shell, command: ['sleep', '4242'] }] },
      });
    await pod('survivor', 'kvpool-node-1');
    await pod('elsewhere', 'some-other-node');
    await untilPod(nodes, ns, 'survivor', 'Ready', (p) => (isReady(p) ? p : undefined));
    const sleeping = () =>
      readdirSync('/proc')
        .filter((p) => /^\d+$/.test(p))
        .filter((p) => {
          try {
            return readFileSync(`/proc/${p}/cmdline`, 'utf8') === 'sleep\u00004242\u0000';
          } catch {
            return false;
          }
        });
    // Ready follows the launch marker the script writes just before it execs the command, so the
    // process may still carry the script's name for a moment.
    await until('the Pod’s process to run its command', () => (sleeping().length === 1 ? true : undefined));
    await nodes.restartAgent(async () => {
      assert.deepEqual(sleeping(), [], 'stopping the node agent stops its Pods’ processes');
      const left = await nodes.client.get<Pod>(podRef(ns, 'survivor'));
      assert.equal(left.status!.phase, 'Running', 'and leaves the Pod objects as they are');
      await nodes.client.delete(podRef(ns, 'survivor'));
      await nodes.client.delete(podRef(ns, 'elsewhere'));
      const deleting = await nodes.client.get<Pod>(podRef(ns, 'survivor'));
      assert.ok(deleting.metadata.deletionTimestamp, 'with no node agent the Pod waits for its kubelet');
    });
    await until('the deleted Pod to be removed', async () =>
      (await nodes.client.find(podRef(ns, 'survivor'))) ? undefined : true,
    );
    const other = await nodes.client.get<Pod>(podRef(ns, 'elsewhere'));
    assert.ok(other.metadata.deletionTimestamp);
    await nodes.client.request('DELETE', `/api/v1/namespaces/${ns}/pods/elsewhere`, {
      body: { apiVersion: 'v1', kind: 'DeleteOptions', gracePeriodSeconds: 0 },
    });
  });
});
