// A ModelDeployment's phase, role counts and conditions (ModelDeployment spec §2, KV-cache spec §2.4),
// decided from its Deployments, its cache resolution and what ready replicas report. Pure.
import { formatQuantity } from '../../api/readable-quantity.ts';
import type { ModelDeployment } from '../../api/types.ts';
import { type DecidedCondition, decided } from '../../model/conditions.ts';
import type { CacheReports } from '../../store/replica-reports.ts';
import type { CacheResolution } from './connection.ts';
import { servicePort } from './render.ts';

export interface RoleView {
  name: string;
  kind: 'Server' | 'Prefill' | 'Decode';
  desired: number;
  ready: number;
  /** Replicas running the current template. */
  updated: number;
  unmanaged: boolean;
}

export interface DeploymentView {
  md: ModelDeployment;
  roles: RoleView[];
  cache: CacheResolution;
  /** Replicas whose render changed but that are kept while no cache connection resolved. */
  heldByCache: boolean;
  reports?: CacheReports;
  /** Bytes the deployment's domain holds on the store, from its Binding (undefined: not reported). */
  domainUsageBytes?: number;
  /** Why the roles could not be rendered this pass (nothing was applied), if so. */
  renderFailure?: string;
}

function cacheAttached(v: DeploymentView): DecidedCondition {
  if (!v.md.spec.kvCache)
    return decided('CacheAttached', 'True', 'NotApplicable', 'this deployment uses no shared cache');
  if (v.roles.every((r) => r.unmanaged)) {
    return decided(
      'CacheAttached',
      'Unknown',
      'Unmanaged',
      'every role takes over its command, so no cache configuration is rendered',
    );
  }
  if (!v.roles.some((r) => r.ready > 0))
    return decided(
      'CacheAttached',
      'Unknown',
      'NoReplicaReady',
      'no replica is ready to report on the cache',
    );
  if (v.reports && v.reports.successes > 0) {
    return decided(
      'CacheAttached',
      'True',
      'CacheActive',
      `ready replicas report ${v.reports.successes} successful store operation(s)`,
    );
  }
  if (v.reports && v.reports.failures > 0) {
    return decided(
      'CacheAttached',
      'False',
      'CacheOperationsFailing',
      `ready replicas report ${v.reports.failures} store operation(s), none successful`,
    );
  }
  if (!v.reports && (v.domainUsageBytes ?? 0) > 0) {
    return decided(
      'CacheAttached',
      'True',
      'CacheActive',
      `no replica reported, and the shared domain holds ${formatQuantity(v.domainUsageBytes!)}`,
    );
  }
  return decided(
    'CacheAttached',
    'Unknown',
    'NoObservationAvailable',
    'ready replicas have not used the cache yet (idle is not detached)',
  );
}

function upToDate(v: DeploymentView): DecidedCondition {
  if (v.renderFailure) {
    return decided(
      'ReplicasUpToDate',
      'False',
      'RenderFailed',
      `the roles cannot be rendered, so nothing of this spec is applied and the replicas run as they were: ${v.renderFailure}`,
    );
  }
  if (v.heldByCache) {
    return decided(
      'ReplicasUpToDate',
      'False',
      'RolloutHeldByCache',
      'the cache connection did not resolve this pass: replicas are kept as they are rather than restarted without a connector',
    );
  }
  const behind = v.roles.filter((r) => r.updated < r.desired);
  if (behind.length) {
    return decided(
      'ReplicasUpToDate',
      'False',
      'RolloutInProgress',
      `roles rolling out: ${behind.map((r) => `${r.name} ${r.updated}/${r.desired}`).join(', ')}`,
    );
  }
  return decided('ReplicasUpToDate', 'True', 'UpToDate', 'every replica runs the current template');
}

const kindLetter: Record<RoleView['kind'], string> = { Server: 'S', Prefill: 'P', Decode: 'D' };

/** Ready instances by kind, e.g. `2S` or `1P1D`. */
export function roleSummary(roles: RoleView[]): string {
  const counts = new Map<string, number>();
  for (const r of roles) counts.set(kindLetter[r.kind], (counts.get(kindLetter[r.kind]) ?? 0) + r.ready);
  return ['P', 'D', 'S']
    .filter((k) => counts.has(k))
    .map((k) => `${counts.get(k)}${k}`)
    .join('');
}

export function decideDeployment(v: DeploymentView) {
  const md = v.md;
  const kindsReady = v.roles.every((r) => r.ready >= r.desired);
  const conditions: DecidedCondition[] = [
    v.cache.domainRegistered,
    cacheAttached(v),
    upToDate(v),
    kindsReady
      ? decided('RoleKindsReady', 'True', 'AllKindsReady', 'every role has its replicas ready')
      : decided(
          'RoleKindsReady',
          'False',
          'KindsNotReady',
          `roles not ready: ${v.roles
            .filter((r) => r.ready < r.desired)
            .map((r) => `${r.name} ${r.ready}/${r.desired}`)
            .join(', ')}`,
        ),
    decided('KVEventsPublishing', 'True', 'NotApplicable', 'no router consumes KV events'),
  ];
  const readyAny = v.roles.some((r) => r.ready > 0);
  let phase: string;
  let phaseMessage: string;
  if (md.metadata.deletionTimestamp) [phase, phaseMessage] = ['Deleting', 'removing the replicas'];
  else if (v.renderFailure)
    [phase, phaseMessage] = [readyAny ? 'Degraded' : 'Starting', conditions[2]!.message];
  else if (kindsReady) [phase, phaseMessage] = ['Ready', ''];
  else if (readyAny) [phase, phaseMessage] = ['Degraded', conditions[3]!.message];
  else [phase, phaseMessage] = ['Starting', conditions[3]!.message];
  const name = md.metadata.name!;
  return {
    phase,
    phaseMessage,
    conditions,
    status: {
      observedGeneration: md.metadata.generation,
      roles: v.roles.map((r) => ({
        name: r.name,
        kind: r.kind,
        desired: r.desired,
        ready: r.ready,
        ...(r.unmanaged ? { unmanaged: true } : {}),
      })),
      roleSummary: roleSummary(v.roles),
      endpoint: `http://${name}.${md.metadata.namespace}.svc:${servicePort}`,
      ...(v.cache.echo ? { kvCache: v.cache.echo } : {}),
    },
  };
}
