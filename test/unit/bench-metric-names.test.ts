// The benches read the operator's metrics by name: every name they read is one the operator exports,
// so a renamed metric cannot leave a bench reading nothing (a figure of 0, a ratio of Infinity).
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { it } from 'node:test';
import { projectRoot } from '../../images/toolchain.ts';
import { fullRegistry } from './metric-modules.ts';

/** The families the operator exports under: kvpool's, controller-runtime's, client-go's, prom-client's. */
const operatorFamily =
  /\b((?:kvpool|controller_runtime|workqueue|rest_client|leader_election|nodejs|process)_[a-z_]+)\b/g;

it('the benches name only metrics the operator exports', async () => {
  const exported = new Set((await (await fullRegistry()).getMetricsAsJSON()).map((m) => m.name));
  const bench = join(projectRoot, 'bench');
  const unknown = readdirSync(bench)
    .filter((f) => f.endsWith('.ts'))
    .flatMap((f) =>
      [...readFileSync(join(bench, f), 'utf8').matchAll(operatorFamily)]
        .map((m) => m[1]!)
        // A histogram's series carry the family name with a suffix.
        .filter((name) => !exported.has(name.replace(/_(sum|count|bucket)$/, '')))
        .map((name) => `bench/${f}: ${name}`),
    );
  assert.deepEqual([...new Set(unknown)], []);
});
