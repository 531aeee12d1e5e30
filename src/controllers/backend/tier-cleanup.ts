// `cleanAfterDelete: true`: once a deleted backend's members are gone, empty the
// tier directory's content on every node the group selected at deletion time, with one cleanup Pod per
// node and a 5-minute deadline each; never a path another backend's tier also uses. Outcomes that
// leave content behind are Warning events on the Node.

import { createHash } from 'node:crypto';
import type { Node, Pod } from 'kubernetes-types/core/v1.js';
import { canonicalTierPath, tierPathProblem } from '../../api/tier-path.ts';
import type { KVCacheBackend } from '../../api/types.ts';
import type { KubeObject } from '../../kube/object.ts';
import type { OperatorContext } from '../../operator-io/operator-context.ts';
import { shellQuote } from '../../shell.ts';
import {
  groupDisk,
  managedConnection,
  resolveImages,
  storePullSecrets,
} from '../../vocabulary/backend-spec.ts';
import { workerApiVersion } from '../../vocabulary/identity.ts';
import { backendLabels, backendOwnerReference } from '../../vocabulary/store-objects.ts';
import { smallJobResources, storeSecurityContext } from './render-hardening.ts';
import { memberUser } from './render-members.ts';
import { tierCleanupComponent } from './render-network.ts';

/** The cleanup of one group's tier directory on one node. */
interface NodeCleanup {
  group: number;
  path: string;
  node: string;
  nodeUid?: string;
  outcome?: 'cleaned' | 'skipped' | 'partly' | 'not-cleaned';
}

/** How long a node's tier cleanup Pod may take before it is deleted and the directory reported not emptied. */
export const defaultTierCleanupDeadlineMs = 5 * 60_000;

/** Paths overlap when equal or one contains the other, compared by canonical components. */
export function pathsOverlap(a: string, b: string): boolean {
  const parts = (p: string) => canonicalTierPath(p).split('/').filter(Boolean);
  const [x, y] = [parts(a), parts(b)];
  const [shorter, longer] = x.length <= y.length ? [x, y] : [y, x];
  return shorter.every((c, i) => c === longer[i]);
}

/** "5 minutes", "1 minute", "8 s": the deadline as the events state it. */
export function spokenDuration(ms: number): string {
  if (ms % 60_000 === 0) return `${ms / 60_000} minute${ms === 60_000 ? '' : 's'}`;
  return `${Math.round(ms / 1000)} s`;
}

function podName(backend: string, group: number, node: string): string {
  const full = `${backend}-tier-clean-${group}-${node}`;
  return full.length <= 63
    ? full
    : `${full.slice(0, 50)}-${createHash('sha256').update(full).digest('hex').slice(0, 12)}`;
}

export class TierCleanup {
  private readonly ctx: OperatorContext;
  private readonly deadlineMs: number;
  /** Per backend uid: the nodes each group selected when the deletion began. */
  private readonly plans = new Map<string, NodeCleanup[]>();

  /** The `kv-cache-image-pull-secrets` Setting's names. */
  private pullSecrets(): string[] {
    return this.ctx.settings.list('kv-cache-image-pull-secrets');
  }

  constructor(ctx: OperatorContext, deadlineMs = defaultTierCleanupDeadlineMs) {
    this.ctx = ctx;
    this.deadlineMs = deadlineMs;
  }

  /** Advances the cleanup; done once every node is cleaned, skipped or given up. */
  async run(backend: KVCacheBackend): Promise<{ done: boolean; message: string }> {
    const jobs = await this.plan(backend);
    if (jobs.some((j) => !j.outcome)) {
      // Read live, not from the cache: emptying a directory cannot be undone, and a backend created a
      // moment ago on the same path may not have reached the cache yet.
      const backends = (
        await this.ctx.client.list<KVCacheBackend>({ apiVersion: workerApiVersion, kind: 'KVCacheBackend' })
      ).items;
      for (const job of jobs.filter((j) => !j.outcome)) await this.advance(backend, job, backends);
    }
    const open = jobs.filter((j) => !j.outcome);
    return open.length
      ? { done: false, message: `emptying the tier directory on ${open.map((j) => j.node).join(', ')}` }
      : { done: true, message: 'tier directories handled' };
  }

  forget(backend: KVCacheBackend): void {
    this.plans.delete(backend.metadata.uid!);
  }

  private async plan(backend: KVCacheBackend): Promise<NodeCleanup[]> {
    const known = this.plans.get(backend.metadata.uid!);
    if (known) return known;
    if (!backend.spec.connection.managed) return []; // an external store's disks are not ours
    const nodes = (await this.ctx.client.list<KubeObject<Node>>({ apiVersion: 'v1', kind: 'Node' })).items;
    const jobs: NodeCleanup[] = [];
    managedConnection(backend).members.forEach((group, i) => {
      const disk = groupDisk(group);
      if (!disk?.cleanAfterDelete) return;
      const selected = nodes.filter((n) =>
        Object.entries(group.nodeSelector).every(([k, v]) => n.metadata.labels?.[k] === v),
      );
      for (const n of selected)
        jobs.push({ group: i, path: disk.path, node: n.metadata.name!, nodeUid: n.metadata.uid });
    });
    this.plans.set(backend.metadata.uid!, jobs);
    return jobs;
  }

  /** Another backend's tier on a path overlapping this one (re-checked every pass). */
  private sharedWith(backend: KVCacheBackend, path: string, backends: KVCacheBackend[]): string | undefined {
    for (const other of backends) {
      if (other.metadata.uid === backend.metadata.uid || !other.spec.connection.managed) continue;
      if (
        other.spec.connection.managed.members.some(
          (g) => groupDisk(g) && pathsOverlap(groupDisk(g)!.path, path),
        )
      )
        return other.metadata.name;
    }
    return undefined;
  }

  private async nodeEvent(job: NodeCleanup, reason: string, message: string): Promise<void> {
    const node: KubeObject<Node> = {
      apiVersion: 'v1',
      kind: 'Node',
      metadata: { name: job.node, uid: job.nodeUid },
    };
    await this.ctx.events.record(node, 'Warning', reason, message);
  }

  private async advance(
    backend: KVCacheBackend,
    job: NodeCleanup,
    backends: KVCacheBackend[],
  ): Promise<void> {
    const name = podName(backend.metadata.name!, job.group, job.node);
    const ref = { apiVersion: 'v1', kind: 'Pod', namespace: this.ctx.namespace, name };
    // A path stored before admission refused system directories is never emptied.
    const problem = tierPathProblem(job.path);
    if (problem) {
      job.outcome = 'not-cleaned';
      return this.nodeEvent(
        job,
        'KVCacheTierNotCleaned',
        `${job.path} of backend ${backend.metadata.name} was left as it is: ${problem}`,
      );
    }
    const shared = this.sharedWith(backend, job.path, backends);
    if (shared) {
      await this.ctx.client.delete(ref);
      job.outcome = 'skipped';
      return this.nodeEvent(
        job,
        'KVCacheTierSharedPath',
        `${job.path} of backend ${backend.metadata.name} overlaps backend ${shared}'s tier; nothing was removed`,
      );
    }
    const pod = await this.ctx.client.find<KubeObject<Pod>>(ref);
    if (!pod) return this.create(backend, job, name);
    const phase = pod.status?.phase;
    const age = Date.now() - Date.parse(pod.metadata.creationTimestamp ?? new Date().toISOString());
    if (phase === 'Succeeded') job.outcome = 'cleaned';
    else if (phase === 'Failed') {
      job.outcome = 'partly';
      await this.nodeEvent(
        job,
        'KVCacheTierPartlyEmptied',
        `emptying ${job.path} for backend ${backend.metadata.name} failed part way; some content remains`,
      );
    } else if (age > this.deadlineMs) {
      const within = spokenDuration(this.deadlineMs);
      job.outcome = phase === 'Running' ? 'partly' : 'not-cleaned';
      await this.ctx.client.delete(ref);
      await this.nodeEvent(
        job,
        phase === 'Running' ? 'KVCacheTierPartlyEmptied' : 'KVCacheTierNotCleaned',
        phase === 'Running'
          ? `emptying ${job.path} for backend ${backend.metadata.name} did not finish within ${within} and was stopped; some content remains`
          : `${job.path} for backend ${backend.metadata.name} could not be emptied within ${within} (the node did not run the cleanup); its content remains`,
      );
    }
  }

  private async create(backend: KVCacheBackend, job: NodeCleanup, name: string): Promise<void> {
    let image: string;
    try {
      image = resolveImages(backend, this.ctx.settings.get('kv-cache-backend-image').trim()).members[
        job.group
      ]!;
    } catch (err) {
      job.outcome = 'not-cleaned';
      return this.nodeEvent(
        job,
        'KVCacheTierNotCleaned',
        `no image to empty ${job.path} with: ${String(err)}`,
      );
    }
    await this.ctx.client.create<KubeObject<Pod>>({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: {
        name,
        namespace: this.ctx.namespace,
        labels: backendLabels(backend.metadata.name!, tierCleanupComponent),
        ownerReferences: [backendOwnerReference(backend)],
      },
      spec: {
        nodeName: job.node,
        restartPolicy: 'Never',
        tolerations: [{ operator: 'Exists' }],
        ...storePullSecrets(backend, this.pullSecrets()),
        // No API access and no network (a NetworkPolicy cuts it off): it only empties a directory.
        automountServiceAccountToken: false,
        enableServiceLinks: false,
        containers: [
          {
            name: 'empty-tier',
            image,
            // The directory stays (the admin made it, with its owner); only its content goes.
            command: ['sh', '-c', `find ${shellQuote(job.path)} -mindepth 1 -delete`],
            resources: smallJobResources,
            // The member's own user wrote the content, so that user can remove it.
            securityContext: storeSecurityContext([], { runAsUser: memberUser(backend, job.group) }),
            volumeMounts: [{ name: 'local-disk', mountPath: job.path }],
          },
        ],
        volumes: [{ name: 'local-disk', hostPath: { path: job.path, type: 'Directory' } }],
      },
    });
  }
}
