// The doctor's rows about a store with replicated metadata (decision 50): no standby follows the OpLog
// (a failover now would start empty), and its etcd without a quorum. Pure.
import { conditionOf } from '../api/conditions.ts';
import { BackendCondition, BackendReason } from '../api/kvcache-backend-conditions.ts';
import { type Check, type Finding, said } from './finding.ts';

export const oplogNotFollowed: Check = {
  id: 'oplog-not-followed',
  title: 'No standby follows the OpLog (MetadataReplicated=False)',
  run(s) {
    return s.backends.flatMap((b): Finding[] => {
      const c = conditionOf(b, BackendCondition.MetadataReplicated);
      if (c?.status !== 'False') return [];
      const lagging = c.reason === BackendReason.Lagging;
      return [
        {
          object: `KVCacheBackend/${b.metadata.name}`,
          severity: 'warning',
          summary: lagging
            ? 'the nearest standby is behind the OpLog: a failover now loses what it has not applied'
            : 'no standby follows the OpLog: a failover now starts with an empty index',
          evidence: [said(c)],
          fix: lagging
            ? 'give the leader Pods CPU (leader.resources) and check etcd for slow writes (kvpool_backend_oplog_lag_entries)'
            : 'run at least two leader replicas (leader.replicas) on nodes where they can be scheduled, and check the standbys’ logs (kubectl logs) for their etcd connection',
        },
      ];
    });
  },
};

export const etcdQuorum: Check = {
  id: 'etcd-quorum',
  title: "The store's etcd has no quorum (EtcdAvailable=False)",
  run(s) {
    return s.backends.flatMap((b): Finding[] => {
      const c = conditionOf(b, BackendCondition.EtcdAvailable);
      if (c?.status !== 'False') return [];
      return [
        {
          object: `KVCacheBackend/${b.metadata.name}`,
          severity: 'error',
          summary:
            'too few etcd members answer: no master can be elected or write its OpLog, so a failover now leaves the store without a master',
          evidence: [said(c)],
          fix: `bring the members back (kubectl -n <operator namespace> get pods -l app.kubernetes.io/instance=${b.metadata.name},app.kubernetes.io/component=etcd); a member whose volume is lost must be removed from the etcd before it can join again`,
        },
      ];
    });
  },
};
