// `kubectl kvpool doctor`: the troubleshooting table of the walkthrough, every row checked against
// what the cluster shows now, each finding with its evidence and its fix. Pure.
import { quotaChecks } from './doctor-quota.ts';
import { etcdQuorum, oplogNotFollowed } from './doctor-replication.ts';
import { storeChecks } from './doctor-store.ts';
import { tierFull } from './doctor-tier.ts';
import type { Check, Finding } from './finding.ts';
import type { Snapshot } from './snapshot.ts';

export interface CheckResult {
  id: string;
  title: string;
  findings: Finding[];
}

export interface DoctorReport {
  checks: CheckResult[];
  /** Whether nothing is wrong: no error and no warning (info findings are expected states). */
  healthy: boolean;
}

export const checks: Check[] = [...storeChecks, tierFull, oplogNotFollowed, etcdQuorum, ...quotaChecks];

export function doctor(s: Snapshot): DoctorReport {
  const results = checks.map((c) => ({ id: c.id, title: c.title, findings: c.run(s) }));
  return {
    checks: results,
    healthy: results.every((r) => r.findings.every((f) => f.severity === 'info')),
  };
}
