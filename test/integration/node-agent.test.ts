// The local cluster's node agent on a real control plane (with the Deployment, DaemonSet and
// ReplicaSet controllers and the real scheduler): Nodes register Ready, Pods run as processes with
// their own IPs, environment, volumes and user, probes and restarts behave as a kubelet's, deletion
// runs preStop and removes the Pod, and a container reads its own Pod with its service-account token.
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { KubeObject } from '../../src/kube/object.ts';
import type { Pod } from '../../src/local/node-agent/pod-types.ts';
import { podDirName } from '../../src/local/node-agent/sandbox.ts';
import { waitFor } from '../../src/local/wait-for.ts';
import { ensureNamespace, until } from '../support/cluster.ts';
import {
  containerLog,
  isReady,
  type LocalNodes,
  podRef,
  startLocalNodes,
  testNodes,
  untilPod,
} from '../support/node-agent.ts';

// biome-ignore lint/suspicious/noExplicitAny: test-only access to arbitrary object fields
type Loose = any;
const ns = 'agent-test';
const shell = 'kvpool.local/shell:1.0';

describe('the node agent runs Pods as processes on two local nodes', () => {
  let nodes: LocalNodes;
  let leaseAtStart: string;
  const listPods = async (selector: string) =>
    (
      await nodes.client.list<Pod>(
        { apiVersion: 'v1', kind: 'Pod', namespace: ns },
        { labelSelector: selector },
      )
    ).items;
  const createPod = (name: string, spec: Loose, labels: Record<string, string> = {}) =>
    nodes.client.create({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name, namespace: ns, labels },
      spec,
    } as KubeObject);
  const volumeDir = (pod: Pod, volume: string) =>
    join(nodes.root, 'pods', podDirName(pod), 'volumes', volume);

  before(async () => {
    nodes = await startLocalNodes({ nodeLabels: { 'kvpool-node-2': { 'example.com/zone': 'b' } } });
    await ensureNamespace(nodes.client, ns);
    const lease = await nodes.client.get<Loose>({
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      namespace: 'kube-node-lease',
      name: 'kvpool-node-1',
    });
    leaseAtStart = lease.spec.renewTime;
  });
  after(async () => {
    await nodes?.stop();
  });

  it('registers both Nodes Ready, untainted, with labels, capacity and an InternalIP of this machine', async () => {
    for (const [i, name] of testNodes.entries()) {
      const node = await nodes.client.get<Loose>({ apiVersion: 'v1', kind: 'Node', name });
      assert.equal(node.metadata.labels['kubernetes.io/hostname'], name);
      assert.equal(node.metadata.labels['kubernetes.io/os'], 'linux');
      assert.equal(node.metadata.labels['kubernetes.io/arch'], 'amd64');
      assert.equal(node.metadata.labels['example.com/zone'], i === 1 ? 'b' : undefined);
      assert.deepEqual(node.spec.taints ?? [], []);
      assert.deepEqual(node.status.allocatable, {
        cpu: '16',
        memory: '64Gi',
        pods: '110',
        'nvidia.com/gpu': '4',
      });
      const ready = node.status.conditions.find((c: Loose) => c.type === 'Ready');
      assert.equal(ready.status, 'True');
      assert.equal(ready.reason, 'KubeletReady');
      assert.equal(node.status.addresses[0].type, 'InternalIP');
      assert.equal(node.status.addresses[0].address, nodes.agent.nodeIP(name));
      assert.match(node.status.addresses[0].address, /^198\.1[89]\.\d+\.\d+$/);
    }
  });

  it('makes a one-container Pod Ready within moments of its creation', async () => {
    const created = Date.now();
    await createPod('quick', { containers: [{ name: 'app', image: shell, command: ['sleep', '1000'] }] });
    await waitFor(
      async () => (isReady(await nodes.client.get<Pod>(podRef(ns, 'quick'))) ? true : undefined),
      { what: 'the Pod to be Ready', timeoutMs: 30_000, intervalMs: 5 },
    );
    const ms = Date.now() - created;
    console.log(`a one-container Pod was Ready ${ms} ms after creation (scheduling included)`);
    assert.ok(ms < 5000, `${ms} ms`);
  });

  it('runs a Deployment: own IPs, env from fieldRef, configMap, shared emptyDir, hostPath, runAsUser', async () => {
    await nodes.client.create({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'greeting', namespace: ns },
      data: { greeting: 'hello from a ConfigMap' },
    } as KubeObject);
    const created = Date.now();
    await nodes.client.create({
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'web', namespace: ns },
      spec: {
        replicas: 2,
        selector: { matchLabels: { app: 'web' } },
        template: {
          metadata: { labels: { app: 'web' } },
          spec: {
            volumes: [
              { name: 'out', emptyDir: {} },
              { name: 'config', configMap: { name: 'greeting' } },
              { name: 'node-data', hostPath: { path: '/var/lib/kvpool-test', type: 'DirectoryOrCreate' } },
            ],
            containers: [
              {
                name: 'writer',
                image: shell,
                command: ['sh', '-c'],
                args: [
                  'echo $(MY_POD_IP) > /tmp/out/ip; echo "uid=$(id -u) gid=$(id -g)"; ' +
                    'cat /tmp/config/greeting > /tmp/out/greeting; echo $(MY_NODE) > /tmp/out/node; exec sleep 1000',
                ],
                env: [
                  { name: 'MY_POD_IP', valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } },
                  { name: 'MY_NODE', valueFrom: { fieldRef: { fieldPath: 'spec.nodeName' } } },
                ],
                securityContext: { runAsUser: 1000, runAsGroup: 1000 },
                volumeMounts: [
                  { name: 'out', mountPath: '/tmp/out' },
                  { name: 'config', mountPath: '/tmp/config', readOnly: true },
                ],
              },
              {
                name: 'reader',
                image: shell,
                command: [
                  'sh',
                  '-c',
                  'while [ ! -s /shared/ip ]; do sleep 0.1; done; echo $(POD_NAME) > /kvpool-node-data/$(POD_NAME); ' +
                    'echo "peer wrote $(cat /shared/ip)"; exec sleep 1000',
                ],
                env: [{ name: 'POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } }],
                volumeMounts: [
                  { name: 'out', mountPath: '/shared' },
                  { name: 'node-data', mountPath: '/kvpool-node-data' },
                ],
              },
            ],
          },
        },
      },
    } as KubeObject);
    const pods = await until('two ready web Pods', async () => {
      const p = await listPods('app=web');
      return p.length === 2 && p.every(isReady) ? p : undefined;
    });
    console.log(`two Deployment Pods Ready ${Date.now() - created} ms after the Deployment was created`);
    const ips = pods.map((p) => p.status!.podIP!);
    assert.notEqual(ips[0], ips[1]);
    for (const pod of pods) {
      const ip = pod.status!.podIP!;
      assert.match(ip, /^198\.1[89]\.\d+\.\d+$/);
      assert.ok(testNodes.includes(pod.spec.nodeName!));
      const out = volumeDir(pod, 'out');
      // `node` is the writer's last file; the shell creates it before echo fills it.
      await until('the writer to fill the emptyDir', () =>
        existsSync(join(out, 'node')) && readFileSync(join(out, 'node'), 'utf8').endsWith('\n')
          ? true
          : undefined,
      );
      assert.equal(readFileSync(join(out, 'ip'), 'utf8').trim(), ip);
      assert.equal(readFileSync(join(out, 'node'), 'utf8').trim(), pod.spec.nodeName);
      assert.equal(readFileSync(join(out, 'greeting'), 'utf8'), 'hello from a ConfigMap');
      assert.match(containerLog(nodes, pod, 'writer'), /uid=1000 gid=1000/);
      await until('the reader to see the writer', () =>
        containerLog(nodes, pod, 'reader').includes(`peer wrote ${ip}`) ? true : undefined,
      );
      const onNode = join(
        nodes.agent.nodeRoot(pod.spec.nodeName!),
        'var/lib/kvpool-test',
        pod.metadata.name!,
      );
      assert.equal(readFileSync(onNode, 'utf8').trim(), pod.metadata.name);
      const statuses = pod.status!.containerStatuses!;
      assert.deepEqual(
        statuses.map((s) => [s.name, s.ready, s.restartCount, Boolean(s.state.running)]),
        [
          ['writer', true, 0, true],
          ['reader', true, 0, true],
        ],
      );
      assert.match(statuses[0]!.imageID, /^kvpool\.local\/shell@sha256:[0-9a-f]{64}$/);
      assert.equal(pod.status!.hostIP, nodes.agent.nodeIP(pod.spec.nodeName!));
    }

    // A ConfigMap edit reaches the file in place (same inode), as a bind mount needs.
    const file = join(volumeDir(pods[0]!, 'config'), 'greeting');
    const inode = statSync(file).ino;
    await nodes.client.mergePatch(
      { apiVersion: 'v1', kind: 'ConfigMap', namespace: ns, name: 'greeting' },
      { data: { greeting: 'edited' } },
    );
    await until('the edited ConfigMap in the volume', () =>
      readFileSync(file, 'utf8') === 'edited' ? true : undefined,
    );
    assert.equal(statSync(file).ino, inode);
  });

  it('builds env from Secrets, envFrom and $(VAR) expansion; keeps a downwardAPI volume up to date', async () => {
    await nodes.client.create({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'creds', namespace: ns },
      stringData: { password: 's3cret', 'config.yaml': 'mode: secret\n' },
    } as KubeObject);
    await nodes.client.create({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'settings', namespace: ns },
      data: { COLOR: 'blue', SIZE: 'large' },
    } as KubeObject);
    await createPod(
      'env',
      {
        volumes: [
          {
            name: 'info',
            downwardAPI: { items: [{ path: 'labels', fieldRef: { fieldPath: 'metadata.labels' } }] },
          },
          { name: 'creds', secret: { secretName: 'creds', defaultMode: 0o400 } },
        ],
        containers: [
          {
            name: 'app',
            image: shell,
            command: [
              'sh',
              '-c',
              'echo "$(GREETING)" \'$$(NOT_EXPANDED)\' "$PASSWORD $APP_COLOR"; cat /etc/app.yaml; exec sleep 1000',
            ],
            envFrom: [{ prefix: 'APP_', configMapRef: { name: 'settings' } }],
            env: [
              { name: 'PASSWORD', valueFrom: { secretKeyRef: { name: 'creds', key: 'password' } } },
              { name: 'GREETING', value: 'hi $(APP_SIZE)' },
            ],
            volumeMounts: [
              { name: 'info', mountPath: '/etc/podinfo' },
              { name: 'creds', mountPath: '/etc/app.yaml', subPath: 'config.yaml' },
            ],
          },
        ],
      },
      { tier: 'one' },
    );
    const pod = await untilPod(nodes, ns, 'env', 'Ready', (p) => (isReady(p) ? p : undefined));
    const log = await until('the output', () => {
      const text = containerLog(nodes, pod, 'app');
      return text.includes('mode:') ? text : undefined;
    });
    assert.equal(log, 'hi large $(NOT_EXPANDED) s3cret blue\nmode: secret\n');
    const secretFile = join(volumeDir(pod, 'creds'), 'password');
    assert.equal(statSync(secretFile).mode & 0o777, 0o400);
    const labels = join(volumeDir(pod, 'info'), 'labels');
    assert.equal(readFileSync(labels, 'utf8'), 'tier="one"');
    await nodes.client.mergePatch(podRef(ns, 'env'), { metadata: { labels: { tier: 'two' } } });
    await until('the relabelled Pod in the downwardAPI volume', () =>
      readFileSync(labels, 'utf8') === 'tier="two"' ? true : undefined,
    );
  });

  it('marks a Pod Ready when its httpGet readiness probe passes, measuring creation to Ready', async () => {
    const created = Date.now();
    await createPod('http', {
      volumes: [{ name: 'www', emptyDir: {} }],
      containers: [
        {
          name: 'web',
          image: shell,
          command: [
            'sh',
            '-c',
            'echo ok > /www/ready; exec python3 -m http.server --bind $(POD_IP) 8080 -d /www',
          ],
          env: [{ name: 'POD_IP', valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } }],
          ports: [{ name: 'http', containerPort: 8080 }],
          readinessProbe: {
            httpGet: { path: '/ready', port: 'http' },
            periodSeconds: 1,
            failureThreshold: 1,
          },
          volumeMounts: [{ name: 'www', mountPath: '/www' }],
        },
      ],
    });
    const pod = await untilPod(nodes, ns, 'http', 'Ready', (p) => (isReady(p) ? p : undefined));
    console.log(`a Pod with an httpGet readiness probe was Ready ${Date.now() - created} ms after creation`);
    rmSync(join(volumeDir(pod, 'www'), 'ready'));
    const unready = await untilPod(nodes, ns, 'http', 'not Ready after the probe fails', (p) =>
      isReady(p) ? undefined : p,
    );
    assert.equal(unready.status!.containerStatuses![0]!.ready, false);
    assert.equal(unready.status!.phase, 'Running');
  });

  it('restarts a container whose exec liveness probe starts failing', async () => {
    await createPod('live', {
      volumes: [{ name: 'state', emptyDir: {} }],
      terminationGracePeriodSeconds: 2,
      containers: [
        {
          name: 'app',
          image: shell,
          command: ['sh', '-c', 'touch /state/alive; exec sleep 1000'],
          livenessProbe: {
            exec: { command: ['cat', '/state/alive'] },
            periodSeconds: 1,
            failureThreshold: 2,
          },
          volumeMounts: [{ name: 'state', mountPath: '/state' }],
        },
      ],
    });
    const pod = await untilPod(nodes, ns, 'live', 'Ready', (p) => (isReady(p) ? p : undefined));
    await until('the container to create its file', () =>
      existsSync(join(volumeDir(pod, 'state'), 'alive')) ? true : undefined,
    );
    rmSync(join(volumeDir(pod, 'state'), 'alive'));
    const restarted = await untilPod(nodes, ns, 'live', 'a restart', (p) => {
      const s = p.status?.containerStatuses?.[0];
      return s && s.restartCount >= 1 && s.state.running ? s : undefined;
    });
    assert.equal(restarted.restartCount, 1);
    assert.ok(
      [137, 143].includes(restarted.lastState.terminated!.exitCode),
      JSON.stringify(restarted.lastState),
    );
    assert.equal(restarted.lastState.terminated!.reason, 'Error');
    const events = await nodes.client.list<Loose>(
      { apiVersion: 'v1', kind: 'Event', namespace: ns },
      { fieldSelector: 'involvedObject.name=live' },
    );
    assert.ok(
      events.items.some((e: Loose) => e.reason === 'Unhealthy' && /Liveness probe failed/.test(e.message)),
    );
  });

  it('backs off a container that keeps exiting 1 (CrashLoopBackOff) with its logs as message', async () => {
    await createPod('crash', {
      containers: [
        {
          name: 'app',
          image: shell,
          command: ['sh', '-c', 'echo boom from the container; exit 1'],
          terminationMessagePolicy: 'FallbackToLogsOnError',
        },
      ],
    });
    const status = await untilPod(nodes, ns, 'crash', 'CrashLoopBackOff', (p) => {
      const s = p.status?.containerStatuses?.[0];
      return s?.state.waiting?.reason === 'CrashLoopBackOff' ? s : undefined;
    });
    assert.ok(status.restartCount >= 1);
    assert.equal(status.lastState.terminated!.exitCode, 1);
    assert.match(status.lastState.terminated!.message ?? '', /boom from the container/);
    assert.match(status.state.waiting!.message!, /^back-off 10s restarting failed container=app pod=crash_/);
    const pod = await nodes.client.get<Pod>(podRef(ns, 'crash'));
    assert.equal(pod.status!.phase, 'Running');
    assert.equal(isReady(pod), false);
  });

  it('keeps a Pod whose hostPath Directory is missing in ContainerCreating until it exists', async () => {
    await createPod('needs-dir', {
      nodeName: 'kvpool-node-1',
      volumes: [{ name: 'models', hostPath: { path: '/var/lib/kvpool-models', type: 'Directory' } }],
      containers: [
        {
          name: 'app',
          image: shell,
          command: ['sh', '-c', 'ls /models; exec sleep 1000'],
          volumeMounts: [{ name: 'models', mountPath: '/tmp/models' }],
        },
      ],
    });
    const event = await until('a FailedMount event', async () => {
      const events = await nodes.client.list<Loose>(
        { apiVersion: 'v1', kind: 'Event', namespace: ns },
        { fieldSelector: 'involvedObject.name=needs-dir' },
      );
      return events.items.find((e: Loose) => e.reason === 'FailedMount');
    });
    assert.equal(event.type, 'Warning');
    assert.match(event.message, /hostPath type check failed: \/var\/lib\/kvpool-models is not a directory/);
    // The Event and the Pod status are written independently: wait for the status too.
    const pending = await untilPod(nodes, ns, 'needs-dir', 'its container waiting', (p) =>
      p.status?.containerStatuses?.[0]?.state.waiting ? p : undefined,
    );
    assert.equal(pending.status!.phase, 'Pending');
    assert.equal(pending.status!.containerStatuses?.[0]?.state.waiting?.reason, 'ContainerCreating');
    mkdirSync(join(nodes.agent.nodeRoot('kvpool-node-1'), 'var/lib/kvpool-models'), { recursive: true });
    await untilPod(nodes, ns, 'needs-dir', 'Ready once the directory exists', (p) =>
      isReady(p) ? p : undefined,
    );
  });

  it('runs init containers in order before the app container, and finishes a Never Pod as Succeeded', async () => {
    await createPod('steps', {
      restartPolicy: 'Never',
      volumes: [{ name: 'work', emptyDir: {} }],
      initContainers: [
        {
          name: 'one',
          image: shell,
          command: ['sh', '-c', 'echo one >> /work/order'],
          volumeMounts: [{ name: 'work', mountPath: '/work' }],
        },
        {
          name: 'two',
          image: shell,
          command: ['sh', '-c', 'echo two >> /work/order'],
          volumeMounts: [{ name: 'work', mountPath: '/work' }],
        },
      ],
      containers: [
        {
          name: 'app',
          image: shell,
          command: ['sh', '-c', 'echo app >> /work/order; cat /work/order'],
          volumeMounts: [{ name: 'work', mountPath: '/work' }],
        },
      ],
    });
    const pod = await untilPod(nodes, ns, 'steps', 'Succeeded', (p) =>
      p.status?.phase === 'Succeeded' ? p : undefined,
    );
    assert.equal(containerLog(nodes, pod, 'app'), 'one\ntwo\napp\n');
    assert.deepEqual(
      pod.status!.initContainerStatuses!.map((s) => [s.name, s.state.terminated?.reason]),
      [
        ['one', 'Completed'],
        ['two', 'Completed'],
      ],
    );
  });

  it('runs preStop, SIGTERMs the container and removes a deleted Pod', async () => {
    await createPod('stopper', {
      terminationGracePeriodSeconds: 20,
      volumes: [{ name: 'marks', hostPath: { path: '/var/lib/kvpool-stop', type: 'DirectoryOrCreate' } }],
      nodeName: 'kvpool-node-2',
      containers: [
        {
          name: 'app',
          image: shell,
          command: [
            'sh',
            '-c',
            'trap "echo got TERM >> /marks/term; exit 0" TERM; while true; do sleep 0.2; done',
          ],
          lifecycle: { preStop: { exec: { command: ['sh', '-c', 'echo preStop ran > /marks/prestop'] } } },
          volumeMounts: [{ name: 'marks', mountPath: '/marks' }],
        },
      ],
    });
    await untilPod(nodes, ns, 'stopper', 'Ready', (p) => (isReady(p) ? p : undefined));
    const started = Date.now();
    await nodes.client.delete(podRef(ns, 'stopper'));
    await until('the Pod object to disappear', async () =>
      (await nodes.client.find(podRef(ns, 'stopper'))) ? undefined : true,
    );
    const marks = join(nodes.agent.nodeRoot('kvpool-node-2'), 'var/lib/kvpool-stop');
    assert.equal(readFileSync(join(marks, 'prestop'), 'utf8'), 'preStop ran\n');
    assert.equal(readFileSync(join(marks, 'term'), 'utf8'), 'got TERM\n');
    assert.ok(Date.now() - started < 15_000, 'the container ended on SIGTERM, well before the grace period');
  });

  it('gives a DaemonSet one Pod per node, a hostNetwork Pod its node’s IP', async () => {
    await nodes.client.create({
      apiVersion: 'apps/v1',
      kind: 'DaemonSet',
      metadata: { name: 'per-node', namespace: ns },
      spec: {
        selector: { matchLabels: { app: 'per-node' } },
        template: {
          metadata: { labels: { app: 'per-node' } },
          spec: {
            hostNetwork: true,
            containers: [{ name: 'app', image: shell, command: ['sleep', '1000'] }],
          },
        },
      },
    } as KubeObject);
    const pods = await until('one ready Pod per node', async () => {
      const p = await listPods('app=per-node');
      return p.length === 2 && p.every(isReady) ? p : undefined;
    });
    assert.deepEqual(pods.map((p) => p.spec.nodeName).sort(), testNodes);
    for (const p of pods) assert.equal(p.status!.podIP, nodes.agent.nodeIP(p.spec.nodeName!));
  });

  it('runs the store image as uid 65532 with kvpool-store and the Mooncake wheel on its PATH', async () => {
    await createPod('store-image', {
      containers: [
        {
          name: 'store',
          image: 'kvpool/kvpool-store:0.1.0-mooncake0.3.13.post1',
          command: [
            'sh',
            '-c',
            'echo "uid=$(id -u) gid=$(id -g)"; command -v kvpool-store; command -v mooncake_master; ' +
              'python3 -c "import mooncake.store; print(\\"wheel importable\\")"; exec sleep 1000',
          ],
        },
      ],
    });
    const pod = await untilPod(nodes, ns, 'store-image', 'Ready', (p) => (isReady(p) ? p : undefined));
    const log = await until('the checks to be logged', () => {
      const text = containerLog(nodes, pod, 'store');
      return /wheel importable|Error/.test(text) ? text : undefined;
    });
    assert.match(log, /uid=65532 gid=0/);
    assert.match(log, /\/kvpool-store\n/);
    assert.match(log, /\/mooncake_master\n/);
    assert.match(log, /wheel importable/);
  });

  it('reports an image the local cluster does not have as ErrImagePull', async () => {
    await createPod('unknown-image', {
      containers: [{ name: 'app', image: 'example.com/engine:1', command: ['x'] }],
    });
    const waiting = await untilPod(nodes, ns, 'unknown-image', 'ErrImagePull', (p) => {
      const w = p.status?.containerStatuses?.[0]?.state.waiting;
      return w?.reason === 'ErrImagePull' ? w : undefined;
    });
    assert.match(
      waiting.message!,
      /^image example\.com\/engine:1 is not available on the local cluster \(it runs: .*kvpool\.local\/shell/,
    );
  });

  it('lets a container read its own Pod with the default service-account token', async () => {
    await nodes.client.create({
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'Role',
      metadata: { name: 'pod-reader', namespace: ns },
      rules: [{ apiGroups: [''], resources: ['pods'], verbs: ['get'] }],
    } as KubeObject);
    await nodes.client.create({
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: { name: 'pod-reader', namespace: ns },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'pod-reader' },
      subjects: [{ kind: 'ServiceAccount', name: 'default', namespace: ns }],
    } as KubeObject);
    const sa = '/var/run/secrets/kubernetes.io/serviceaccount';
    const curl = (url: string) =>
      `curl -s -o /dev/null -w "%{http_code}\\n" --cacert ${sa}/ca.crt -H "Authorization: Bearer $(cat ${sa}/token)" ${url}`;
    await createPod('reads-itself', {
      containers: [
        {
          name: 'app',
          image: shell,
          command: [
            'sh',
            '-c',
            `echo "direct $(${curl('https://$(KUBERNETES_SERVICE_HOST):$(KUBERNETES_SERVICE_PORT)/api/v1/namespaces/$(NS)/pods/$(NAME)')})"; ` +
              `echo "by name $(${curl('https://kubernetes.default.svc/api/v1/namespaces/$(NS)/pods/$(NAME)')})"; ` +
              `echo "namespace $(cat ${sa}/namespace)"; exec sleep 1000`,
          ],
          env: [
            { name: 'NS', valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } } },
            { name: 'NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
          ],
        },
      ],
    });
    const pod = await untilPod(nodes, ns, 'reads-itself', 'Ready', (p) => (isReady(p) ? p : undefined));
    const log = await until('both requests to be logged', () => {
      const text = containerLog(nodes, pod, 'app');
      return text.includes('namespace') ? text : undefined;
    });
    assert.match(log, /direct 200/);
    assert.match(log, /by name 200/);
    assert.match(log, new RegExp(`namespace ${ns}`));
  });

  it('renews each Node Lease every 10 s', async () => {
    const lease = await until(
      'a renewed Lease',
      async () => {
        const l = await nodes.client.get<Loose>({
          apiVersion: 'coordination.k8s.io/v1',
          kind: 'Lease',
          namespace: 'kube-node-lease',
          name: 'kvpool-node-1',
        });
        return l.spec.renewTime !== leaseAtStart ? l : undefined;
      },
      15_000,
    );
    assert.equal(lease.spec.holderIdentity, 'kvpool-node-1');
    assert.equal(lease.metadata.ownerReferences[0].kind, 'Node');
  });
});
