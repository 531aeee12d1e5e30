// A ModelDeployment's phase, role counts and conditions (docs/api-reference.md, ModelDeployment status),
// decided from its Deployments, its cache resolution and what ready replicas report. Pure.
import {
  CacheAttachedReason as Reason,
  ReplicasUpToDateReason as Rollout,
} from '../../api/model-deployment.ts';
import {
  ModelDeploymentCondition,
  ModelDeploymentReason,
  modelDeploymentConditions,
} from '../../api/model-deployment-conditions.ts';
import type { ModelDeployment } from '../../api/types.ts';
import { formatQuantity } from '../../kube/readable-quantity.ts';
import type { CacheReports } from '../../store/replica-reports.ts';
import type { ReplicaReading } from '../../store/replica-trend.ts';
import { type ChildConflict, childConflictMessage } from '../../vocabulary/child-ownership.ts';
import { type ConditionStatus, type DecidedCondition, deciderOf } from '../../vocabulary/conditions.ts';
import { poolPrefixOf } from '../../vocabulary/pool-prefix.ts';
import type { CacheResolution } from './connection.ts';
import { servicePort } from './render.ts';

const decided = deciderOf(modelDeploymentConditions);

export interface RoleView {
  name: string;
  kind: 'Server' | 'Prefill' | 'Decode';
  desired: number;
  ready: number;
  /** Replicas running the current template. */
  updated: number;
  unmanaged: boolean;
  /** The scheduler's message for a Pod of the role it cannot place. */
  unschedulable?: string;
}

export interface DeploymentView {
  md: ModelDeployment;
  roles: RoleView[];
  cache: CacheResolution;
  /** Replicas whose render changed but that are kept while no cache connection resolved. */
  heldByCache: boolean;
  /** What the ready replicas' own counters say (undefined: no replica reported). */
  reports?: ReplicaReading;
  /** Bytes the deployment's domain holds on the store, from its Binding (undefined: not reported). */
  domainUsageBytes?: number;
  /** Why the roles could not be rendered this pass (nothing was applied), if so. */
  renderFailure?: string;
  /** Children whose names objects kvpool does not control hold (left alone, not applied). */
  conflicts?: ChildConflict[];
}

function cacheAttached(v: DeploymentView): DecidedCondition {
  const c = (status: ConditionStatus, reason: (typeof Reason)[keyof typeof Reason], message: string) =>
    decided(ModelDeploymentCondition.CacheAttached, status, reason, message);
  if (!v.md.spec.kvCache) return c('True', Reason.NotApplicable, 'this deployment uses no shared cache');
  if (v.roles.every((r) => r.unmanaged)) {
    return c(
      'Unknown',
      Reason.Unmanaged,
      'every role takes over its command, so no cache configuration is rendered',
    );
  }
  if (!v.roles.some((r) => r.ready > 0))
    return c('Unknown', Reason.NoReplicaReady, 'no replica is ready to report on the cache');
  const r = v.reports;
  if (r?.recent === 'failing') {
    const since = r.lastSuccessAt ? `since ${r.lastSuccessAt}` : 'since they were first read';
    return c(
      'False',
      Reason.CacheOperationsFailing,
      `ready replicas report ${r.failedKeys ?? 0} failed store key(s) and no successful one ${since}`,
    );
  }
  if (r?.recent === 'active')
    return c('True', Reason.CacheActive, `ready replicas report ${moved(r.totals)}`);
  if (!r && (v.domainUsageBytes ?? 0) > 0) {
    return c(
      'True',
      Reason.CacheActive,
      `no replica reported, and the shared domain holds ${formatQuantity(v.domainUsageBytes!)}`,
    );
  }
  return c(
    'Unknown',
    Reason.NoObservationAvailable,
    'ready replicas have not used the cache yet (idle is not detached)',
  );
}

/** The keys (vLLM) or tokens (SGLang) the replicas stored and loaded, in their own counters' words. */
function moved(t: CacheReports): string {
  const parts: string[] = [];
  if (t.storedKeys !== undefined || t.loadedKeys !== undefined)
    parts.push(`${t.storedKeys ?? 0} store key(s) written and ${t.loadedKeys ?? 0} read`);
  if (t.storedTokens !== undefined || t.loadedTokens !== undefined)
    parts.push(
      `${t.storedTokens ?? 0} token(s) backed up to the store and ${t.loadedTokens ?? 0} prefetched`,
    );
  return parts.join('; ');
}

function upToDate(v: DeploymentView): DecidedCondition {
  if (v.renderFailure) {
    return decided(
      ModelDeploymentCondition.ReplicasUpToDate,
      'False',
      Rollout.RenderFailed,
      `the roles cannot be rendered, so nothing of this spec is applied and the replicas run as they were: ${v.renderFailure}`,
    );
  }
  if (v.conflicts?.length) {
    return decided(
      ModelDeploymentCondition.ReplicasUpToDate,
      'False',
      Rollout.ChildConflict,
      childConflictMessage(v.conflicts, 'ModelDeployment'),
    );
  }
  if (v.heldByCache) {
    return decided(
      ModelDeploymentCondition.ReplicasUpToDate,
      'False',
      Rollout.RolloutHeldByCache,
      'the cache connection did not resolve this pass: replicas are kept as they are rather than restarted without a connector',
    );
  }
  const behind = v.roles.filter((r) => r.updated < r.desired);
  if (behind.length) {
    return decided(
      ModelDeploymentCondition.ReplicasUpToDate,
      'False',
      Rollout.RolloutInProgress,
      `roles rolling out: ${behind.map((r) => `${r.name} ${r.updated}/${r.desired}`).join(', ')}`,
    );
  }
  return decided(
    ModelDeploymentCondition.ReplicasUpToDate,
    'True',
    Rollout.UpToDate,
    'every replica runs the current template',
  );
}

/** RoleKindsReady=False: the roles short of ready replicas, with the scheduler's reason where it has one. */
function kindsNotReady(roles: RoleView[]): DecidedCondition {
  const short = roles.filter((r) => r.ready < r.desired);
  const stuck = short.filter((r) => r.unschedulable);
  const list = short.map((r) => `${r.name} ${r.ready}/${r.desired}`).join(', ');
  if (stuck.length)
    return decided(
      ModelDeploymentCondition.RoleKindsReady,
      'False',
      ModelDeploymentReason.Unschedulable,
      `roles not ready: ${list}; ${stuck.map((r) => `a Pod of ${r.name} cannot be scheduled: ${r.unschedulable}`).join('; ')} (a tainted node wants roles[].tolerations)`,
    );
  return decided(
    ModelDeploymentCondition.RoleKindsReady,
    'False',
    ModelDeploymentReason.KindsNotReady,
    `roles not ready: ${list}`,
  );
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
      ? decided(
          ModelDeploymentCondition.RoleKindsReady,
          'True',
          ModelDeploymentReason.AllKindsReady,
          'every role has its replicas ready',
        )
      : kindsNotReady(v.roles),
    decided(
      ModelDeploymentCondition.KVEventsPublishing,
      'True',
      ModelDeploymentReason.NotApplicable,
      'no router consumes KV events',
    ),
  ];
  const readyAny = v.roles.some((r) => r.ready > 0);
  let phase: string;
  let phaseMessage: string;
  if (md.metadata.deletionTimestamp) [phase, phaseMessage] = ['Deleting', 'removing the replicas'];
  else if (v.renderFailure || v.conflicts?.length)
    [phase, phaseMessage] = [readyAny ? 'Degraded' : 'Starting', conditions[2]!.message];
  else if (kindsReady) [phase, phaseMessage] = ['Ready', ''];
  else if (readyAny) [phase, phaseMessage] = ['Degraded', conditions[3]!.message];
  else [phase, phaseMessage] = ['Starting', conditions[3]!.message];
  const name = md.metadata.name!;
  const totals = v.reports?.totals;
  const poolPrefix = totals && poolPrefixOf(totals.prefixHitTokens, totals.prefixQueriedTokens);
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
      // Not while another object holds the Service's name: the address would reach that object's Pods.
      ...(v.conflicts?.some((c) => c.kind === 'Service' && c.name === name)
        ? {}
        : { endpoint: `http://${name}.${md.metadata.namespace}.svc:${servicePort}` }),
      ...(v.cache.echo ? { kvCache: v.cache.echo } : {}),
      ...(poolPrefix ? { poolPrefix } : {}),
    },
  };
}
