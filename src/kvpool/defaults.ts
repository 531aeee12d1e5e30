// The operator's settings when neither a flag nor a caller names them: the one table the flags and
// startOperator read. A component's own default is referred to here, never written out again.

import { defaultObserveIntervalMs } from '../controllers/backend/reconciler.ts';
import { defaultTierCleanupDeadlineMs } from '../controllers/backend/tier-cleanup.ts';
import { defaultPoolObserveIntervalMs } from '../controllers/pool/reconciler.ts';
import { defaultTimings } from '../kube/leader-election.ts';
import { defaultClaimGraceMs } from '../vocabulary/domain-claims.ts';

export const operatorDefaults = {
  /** Outside a Pod and without `--namespace`: the walkthrough's. */
  namespace: 'gpustack-system',
  leaseName: 'kvpool-operator',
  leaderElection: defaultTimings,
  healthPort: 8081,
  /** How often each backend's store is asked for its figures. */
  storePollMs: 1000,
  /** How often ready engine replicas are asked what they report about the cache. */
  replicaPollMs: 5000,
  /** How often a backend is passed over without an event. */
  observeIntervalMs: defaultObserveIntervalMs,
  poolObserveIntervalMs: defaultPoolObserveIntervalMs,
  /** How long a node's tier cleanup may take before it is reported and given up. */
  tierCleanupDeadlineMs: defaultTierCleanupDeadlineMs,
  /** How long a domain claim whose Binding does not exist is kept for its create to land. */
  domainClaimGraceMs: defaultClaimGraceMs,
  webhook: {
    port: 9443,
    host: '0.0.0.0',
    service: 'kvpool-webhook',
    secret: 'kvpool-webhook-certs',
    certificates: 'self-managed',
    clusterDomain: 'cluster.local',
  },
} as const;
