// `kubectl kvpool doctor` for people: every row of the table with a mark, and under a row with
// findings each one's object, evidence and fix. Pure.
import type { DoctorReport } from './doctor.ts';
import type { Finding, Severity } from './finding.ts';

const marks: Record<Severity | 'ok', string> = { ok: '✔', error: '✖', warning: '!', info: '•' };
const rank: Severity[] = ['error', 'warning', 'info'];

function worst(findings: Finding[]): Severity | 'ok' {
  return rank.find((s) => findings.some((f) => f.severity === s)) ?? 'ok';
}

export function renderDoctor(report: DoctorReport): string {
  const all = report.checks.flatMap((c) => c.findings);
  const count = (s: Severity) => all.filter((f) => f.severity === s).length;
  const lines = [
    `kvpool doctor: ${count('error')} error(s), ${count('warning')} warning(s), ${count('info')} note(s) over ${report.checks.length} checks`,
    '',
  ];
  for (const c of report.checks) {
    lines.push(`${marks[worst(c.findings)]} ${c.title}`);
    for (const f of c.findings) {
      lines.push(`    ${f.object} — ${f.severity}: ${f.summary}`);
      for (const e of f.evidence) lines.push(`      evidence: ${e}`);
      lines.push(`      fix: ${f.fix}`);
    }
  }
  lines.push('', report.healthy ? 'Nothing is wrong.' : 'Something is wrong: see the ✖ and ! rows above.');
  return `${lines.join('\n')}\n`;
}
