// The doctor's row about a disk tier that does not take the store's writes (decision 39). Pure.
import { conditionOf } from '../api/conditions.ts';
import { BackendCondition, BackendReason } from '../api/kvcache-backend-conditions.ts';
import { type Check, type Finding, said } from './finding.ts';

export const tierFull: Check = {
  id: 'tier-full',
  title: 'Disk tier full or failing writes (TierWritable=False)',
  run(s) {
    return s.backends.flatMap((b): Finding[] => {
      const c = conditionOf(b, BackendCondition.TierWritable);
      if (c?.status !== 'False') return [];
      const failed = c.reason === BackendReason.WriteFailed;
      return [
        {
          object: `KVCacheBackend/${b.metadata.name}`,
          severity: failed ? 'error' : 'warning',
          summary: failed
            ? 'the store could not write its disk tier on the nodes named: new objects there stay in memory only, and a failover loses them'
            : 'the disk tier has less room than one bucket on the nodes named: its next writes may fail',
          evidence: [said(c)],
          fix: 'make room on those nodes (a bigger filesystem under the tier, no other files on it), or lower localDisks[].capacity to what the filesystem holds so the store evicts its own buckets first, or write fewer objects',
        },
      ];
    });
  },
};
