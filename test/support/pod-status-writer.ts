// For tests on a control plane without kubelets: writes what a kubelet and the store would, so the
// controllers and the operator act on it. Each scheduled store Pod gets an address and a running
// container (a member turns Ready `memberMountMs` later, as its port opens after the mount); a
// terminating Pod finishes at once. As the leaders' kvpool-store would, it keeps one running leader
// Pod as the Lease holder (the only Ready leader) and hands the Lease over when the Lease asks that Pod
// to step down. The store's own side of that is tested with real processes elsewhere.
import type { KubeClient, KubeObject } from '../../src/kube/client.ts';
import { type Lease, stepDownAnnotation } from '../../src/kube/leader-election.ts';
import { microTime } from '../../src/kube/time.ts';

// biome-ignore lint/suspicious/noExplicitAny: test-only access to Pod fields
type Pod = KubeObject & { spec: any; status?: any };

export interface Sample {
  at: number;
  readyMembers: number;
  stoppingMembers: number;
  holder: string | undefined;
}

export class PodStatusWriter {
  readonly samples: Sample[] = [];
  /** Every set of Pods the Lease asked to step down (comma-separated), in order, and when. */
  readonly stepDowns: string[] = [];
  readonly stepDownAt: number[] = [];
  /** Every leader Pod that took the Lease, in order. */
  readonly holders: string[] = [];
  private readonly ips = new Map<string, string>();
  private readonly scheduledAt = new Map<string, number>();
  private stopped = false;
  private readonly loop: Promise<void>;
  private error: unknown;

  private readonly client: KubeClient;
  private readonly ns: string;
  private readonly lease: string;
  private readonly memberMountMs: number;

  constructor(client: KubeClient, ns: string, lease: string, memberMountMs: number) {
    this.client = client;
    this.ns = ns;
    this.lease = lease;
    this.memberMountMs = memberMountMs;
    this.loop = this.run();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.loop;
    if (this.error) throw this.error;
  }

  /** The IP a Pod was given. */
  ip(pod: string): string | undefined {
    return this.ips.get(pod);
  }

  private async run(): Promise<void> {
    while (!this.stopped) {
      try {
        await this.tick();
      } catch (err) {
        // Conflicts with the controllers' own writes are retried on the next tick.
        if (!/conflict|modified|not found/i.test(String(err))) this.error ??= err;
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  private async pods(): Promise<Pod[]> {
    return (
      await this.client.list<Pod>(
        { apiVersion: 'v1', kind: 'Pod', namespace: this.ns },
        { labelSelector: 'app.kubernetes.io/name=kv-cache-backend' },
      )
    ).items;
  }

  private async tick(): Promise<void> {
    const pods = await this.pods();
    const holder = await this.holdLease(pods);
    const members = pods.filter((p) =>
      p.metadata.labels?.['app.kubernetes.io/component']?.startsWith('member-'),
    );
    this.samples.push({
      at: performance.now(),
      readyMembers: members.filter((p) => !p.metadata.deletionTimestamp && ready(p)).length,
      stoppingMembers: members.filter((p) => p.metadata.deletionTimestamp).length,
      holder,
    });
    for (const pod of pods) {
      const name = pod.metadata.name!;
      if (pod.metadata.deletionTimestamp) {
        await this.client.request('DELETE', `/api/v1/namespaces/${this.ns}/pods/${name}`, {
          body: { gracePeriodSeconds: 0 },
        });
        continue;
      }
      if (!pod.spec.nodeName) continue;
      if (!this.scheduledAt.has(name)) this.scheduledAt.set(name, performance.now());
      const isLeader = pod.metadata.labels?.['app.kubernetes.io/component'] === 'leader';
      const wantReady = isLeader
        ? holder === name
        : performance.now() - this.scheduledAt.get(name)! >= this.memberMountMs;
      if (pod.status?.podIP && ready(pod) === wantReady) continue;
      await this.writeStatus(pod, wantReady);
    }
  }

  private async writeStatus(pod: Pod, isReady: boolean): Promise<void> {
    const name = pod.metadata.name!;
    if (!this.ips.has(name))
      this.ips.set(name, `10.244.${Math.floor(this.ips.size / 250)}.${(this.ips.size % 250) + 1}`);
    const ip = this.ips.get(name)!;
    const now = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
    const condition = (type: string, status: boolean) => ({
      type,
      status: status ? 'True' : 'False',
      lastTransitionTime: now,
    });
    await this.client.mergePatch(
      { apiVersion: 'v1', kind: 'Pod', namespace: this.ns, name },
      {
        status: {
          phase: 'Running',
          podIP: ip,
          podIPs: [{ ip }],
          hostIP: '192.0.2.10',
          startTime: now,
          conditions: [
            condition('PodScheduled', true),
            condition('Initialized', true),
            condition('ContainersReady', isReady),
            condition('Ready', isReady),
          ],
          containerStatuses: pod.spec.containers.map((c: { name: string; image: string }) => ({
            name: c.name,
            image: c.image,
            imageID: `${c.image}@sha256:${'0'.repeat(64)}`,
            ready: isReady,
            started: true,
            restartCount: 0,
            state: { running: { startedAt: now } },
          })),
        },
      },
      'status',
    );
  }

  /** Keeps one running leader Pod as the holder, handing over when asked; returns its name. */
  private async holdLease(pods: Pod[]): Promise<string | undefined> {
    const ref = { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', namespace: this.ns, name: this.lease };
    const lease = await this.client.find<Lease>(ref);
    if (!lease) return undefined;
    const byIp = (ip: string | undefined) => pods.find((p) => p.status?.podIP && p.status.podIP === ip);
    const current = byIp(lease.spec?.holderIdentity?.split(':')[0]);
    const asked = lease.metadata.annotations?.[stepDownAnnotation]?.split(',') ?? [];
    const named = asked.join(',');
    if (named && this.stepDowns.at(-1) !== named) {
      this.stepDowns.push(named);
      this.stepDownAt.push(performance.now());
    }
    const keeps = current && !current.metadata.deletionTimestamp && !asked.includes(current.metadata.name!);
    if (keeps) return current.metadata.name;
    const next = pods.find(
      (p) =>
        p.metadata.labels?.['app.kubernetes.io/component'] === 'leader' &&
        !p.metadata.deletionTimestamp &&
        p.status?.containerStatuses?.[0]?.state?.running &&
        !asked.includes(p.metadata.name!),
    );
    const now = microTime();
    const spec = next
      ? {
          holderIdentity: `${next.status.podIP}:50051`,
          leaseDurationSeconds: 8,
          acquireTime: now,
          renewTime: now,
        }
      : { holderIdentity: '', renewTime: now };
    await this.client.replace<Lease>({ ...lease, spec: { ...lease.spec, ...spec } });
    if (next) this.holders.push(next.metadata.name!);
    return next?.metadata.name;
  }
}

function ready(p: Pod): boolean {
  return (
    p.status?.conditions?.some(
      (c: { type: string; status: string }) => c.type === 'Ready' && c.status === 'True',
    ) ?? false
  );
}
