// The user docs hold together: every relative link from the README and docs/ reaches a file, the
// troubleshooting page has a row for every check `kubectl kvpool doctor` makes, and the monitoring
// page lists every metric of kvpool's own with its labels.
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, it } from 'node:test';
import { parse } from 'yaml';
import { projectRoot } from '../../images/toolchain.ts';
import { checks } from '../../src/kubectl-kvpool/doctor.ts';
import { fullRegistry } from './metric-modules.ts';

const registry = await fullRegistry();

const docs = join(projectRoot, 'docs');
const pages = [
  join(projectRoot, 'README.md'),
  ...readdirSync(docs)
    // The generated reference holds field patterns, not links.
    .filter((f) => f.endsWith('.md') && f !== 'api-reference.md')
    .map((f) => join(docs, f)),
];
const read = (name: string) => readFileSync(join(docs, name), 'utf8');

describe('the user docs', () => {
  it('link only to files that exist', () => {
    const broken: string[] = [];
    for (const page of pages) {
      for (const [, target] of readFileSync(page, 'utf8').matchAll(/\]\(([^)#\s]+)(#[^)]*)?\)/g)) {
        if (/^[a-z]+:/.test(target!)) continue;
        if (!existsSync(join(dirname(page), target!))) broken.push(`${page}: ${target}`);
      }
    }
    assert.deepEqual(broken, []);
  });

  it('number each decision once, its title with its file’s number, and link decisions that exist', () => {
    const dir = join(docs, 'decisions');
    const files = readdirSync(dir).filter((f) => /^\d{4}-.*\.md$/.test(f));
    const numbers = files.map((f) => Number(f.slice(0, 4)));
    assert.deepEqual(
      numbers.filter((n, i) => numbers.indexOf(n) !== i),
      [],
      'two decisions share a number: give the later one the next free number',
    );
    for (const f of files) {
      const title = readFileSync(join(dir, f), 'utf8').split('\n')[0]!;
      assert.match(title, new RegExp(`^# ${Number(f.slice(0, 4))}\\. `), f);
    }
    const named = pages.flatMap((page) =>
      [...readFileSync(page, 'utf8').matchAll(/decisions\/(\d{4})-/g)].map((m) => Number(m[1])),
    );
    assert.deepEqual(
      named.filter((n) => !numbers.includes(n)),
      [],
    );
  });

  it('give the load the committed bench results were measured under, as the results record it', () => {
    const results = join(projectRoot, 'bench', 'results');
    // A file's load, and the loads of its parts measured in earlier runs (a part not re-run keeps its own).
    const loads = new Map<string, [number, number][]>();
    type Machine = { loadAverageAtStart?: number[]; loadAverageAtEnd?: number[] };
    for (const f of readdirSync(results).filter((n) => n.endsWith('.json'))) {
      const json = JSON.parse(readFileSync(join(results, f), 'utf8')) as Record<string, unknown>;
      const machines = [json, ...Object.values(json)]
        .map((v) => (v && typeof v === 'object' ? (v as { machine?: Machine }).machine : undefined))
        .filter((m): m is Machine => m !== undefined);
      for (const machine of machines) {
        const [start, end] = [machine.loadAverageAtStart?.[0], machine.loadAverageAtEnd?.[0]];
        if (start === undefined || end === undefined) continue;
        const name = f.replace(/\.json$/, '');
        loads.set(name, [...(loads.get(name) ?? []), [start, end]]);
      }
    }
    const all = [...loads.values()].flat(2);
    const [lo, hi] = [Math.min(...all), Math.max(...all)].map((n) => String(Number(n.toFixed(1))));
    const readme = readFileSync(join(projectRoot, 'README.md'), 'utf8');
    for (const [name, text] of [
      ['README.md', readme],
      ['docs/performance.md', read('performance.md')],
    ]) {
      assert.match(
        text!,
        new RegExp(`between ${lo} and ${hi}\\b`),
        `${name}: the range of the committed results`,
      );
    }
    // Each row of the README's table gives its file's 1-minute load at start and end.
    const rows = readme
      .split('\n')
      .filter((l) => /^\| [a-z]+ \|/.test(l) && l.includes('→') && !l.startsWith('| bench |'));
    assert.ok(rows.length >= 10);
    for (const row of rows) {
      const cells = row.split('|').map((c) => c.trim());
      const recorded = loads.get(cells[1]!);
      assert.ok(recorded, `${cells[1]}: no bench/results file with a load`);
      assert.ok(
        recorded.some(([start, end]) => cells.at(-2) === `${start}→${end}`),
        `${row}: the load is none of ${recorded.map(([a, b]) => `${a}→${b}`).join(', ')}`,
      );
    }
  });

  it('have a troubleshooting row for every check the doctor makes', () => {
    const page = read('troubleshooting.md');
    for (const c of checks) assert.match(page, new RegExp(`^\\| \`${c.id}\` \\|`, 'm'), c.id);
  });

  it('never give raising quota.total as the way to full grants: the store cuts by what it can allocate', () => {
    const sources = [
      ...pages,
      join(projectRoot, 'charts', 'kvpool', 'README.md'),
      ...['controllers/pool', 'kubectl-kvpool'].flatMap((dir) =>
        readdirSync(join(projectRoot, 'src', dir)).map((f) => join(projectRoot, 'src', dir, f)),
      ),
    ];
    const wrong = sources.filter((f) =>
      /raise\s+`?quota\.total`?\s+for full grants|for full grants[^.]*raise\s+`?quota\.total/i.test(
        readFileSync(f, 'utf8'),
      ),
    );
    assert.deepEqual(wrong, []);
  });

  it('say that an upgrade rolls the stores onto the new chart version’s store image', () => {
    const chart = parse(readFileSync(join(projectRoot, 'charts', 'kvpool', 'Chart.yaml'), 'utf8')) as {
      version: string;
    };
    const values = parse(readFileSync(join(projectRoot, 'charts', 'kvpool', 'values.yaml'), 'utf8')) as {
      store: { image: { tag: string } };
    };
    // The store image's tag carries the chart's version, so every upgrade changes the Setting.
    assert.ok(values.store.image.tag.startsWith(`${chart.version}-`), values.store.image.tag);
    for (const page of [
      read('upgrade-and-uninstall.md'),
      readFileSync(join(projectRoot, 'charts', 'kvpool', 'README.md'), 'utf8'),
    ]) {
      assert.doesNotMatch(page, /store(s'|) Pods are left alone|without restarting them/);
      assert.match(page, /rolls onto/);
    }
    assert.match(read('upgrade-and-uninstall.md'), /\*\*Lost\*\*: every key held in memory only/);
  });

  it('list every kvpool metric on the monitoring page with its labels, and none that does not exist', async () => {
    const rows = new Map<string, string[]>();
    for (const line of read('monitoring.md').split('\n')) {
      const cells = line.split(' | ');
      if (!line.startsWith('| `kvpool_') || cells.length < 3) continue;
      const labels = [...cells[1]!.matchAll(/`([a-z_]+)`/g)].map((m) => m[1]!);
      for (const [, name] of cells[0]!.matchAll(/`(kvpool_[a-z_]+)`/g)) rows.set(name!, labels);
    }
    const ours = (await registry.getMetricsAsJSON())
      .map((m) => m.name)
      .filter((n) => n.startsWith('kvpool_'));
    assert.ok(ours.length >= 10);
    const labelsOf = (name: string) =>
      (registry.getSingleMetric(name) as unknown as { labelNames: string[] }).labelNames;
    assert.deepEqual(
      ours.filter((n) => !rows.has(n)),
      [],
      'in the registry, not on the page',
    );
    assert.deepEqual(
      [...rows.keys()].filter((n) => !ours.includes(n)),
      [],
      'on the page, not in the registry',
    );
    for (const name of ours) assert.deepEqual(rows.get(name), labelsOf(name), `${name}: labels`);
  });
});
