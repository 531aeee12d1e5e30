// The Grafana dashboard's queries as Prometheus evaluates them: every panel target, with the
// dashboard's variables set to All (Grafana's allValue, `.*`).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { projectRoot } from '../../images/toolchain.ts';

interface Panel {
  type: string;
  title: string;
  targets?: { refId: string; expr: string }[];
  panels?: Panel[];
}

export const dashboardFile = join(projectRoot, 'deploy', 'grafana', 'kvpool.json');

export function dashboardQueries(file = dashboardFile): { panel: string; refId: string; expr: string }[] {
  const d = JSON.parse(readFileSync(file, 'utf8')) as {
    panels: Panel[];
    templating: { list: { name: string; allValue?: string }[] };
  };
  const all = (d.panels ?? []).flatMap((p) => [p, ...(p.panels ?? [])]);
  const vars = d.templating.list.filter((v) => v.allValue !== undefined);
  return all.flatMap((p) =>
    (p.targets ?? []).map((t) => ({
      panel: p.title,
      refId: t.refId,
      expr: vars.reduce((e, v) => e.replaceAll(`$${v.name}`, v.allValue!), t.expr),
    })),
  );
}
