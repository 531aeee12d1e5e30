// The user docs hold together: every relative link from the README and docs/ reaches a file, the
// troubleshooting page has a row for every check `kubectl kvpool doctor` makes, and the monitoring
// page names every metric of kvpool's own.
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, it } from 'node:test';
import { projectRoot } from '../../local/toolchain.ts';
import { checks } from '../../src/cli/plugin/doctor.ts';
import { registry } from '../../src/kube/metrics.ts';
import '../../src/controllers/figure-metrics.ts';
import '../../src/controllers/pool/ledger-metrics.ts';
import '../../src/store/scrape-metrics.ts';

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

  it('have a troubleshooting row for every check the doctor makes', () => {
    const page = read('troubleshooting.md');
    for (const c of checks) assert.match(page, new RegExp(`^\\| \`${c.id}\` \\|`, 'm'), c.id);
  });

  it('name every kvpool metric on the monitoring page', async () => {
    const page = read('monitoring.md');
    const ours = (await registry.getMetricsAsJSON())
      .map((m) => m.name)
      .filter((n) => n.startsWith('kvpool_'));
    assert.ok(ours.length >= 10);
    const unnamed = ours.filter(
      (n) => !['kvpool_watch_restarts_total', 'kvpool_api_writes_total'].includes(n) && !page.includes(n),
    );
    assert.deepEqual(unnamed, []);
  });
});
