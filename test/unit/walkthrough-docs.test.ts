// The walkthrough as documented runs from the docs alone: each step applies its manifest in a console
// block of its own section (which test/e2e/walkthrough-doc.test.ts runs), after console blocks that
// create every namespace it uses and label the nodes its stores select; a manifest that carries the
// INSTANCE_TYPE placeholder is applied through the sed that replaces it.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { parseAllDocuments } from 'yaml';
import { projectRoot } from '../../images/toolchain.ts';
import { consoleSteps, fencedBlocks } from '../support/doc-blocks.ts';

const dir = join(projectRoot, 'examples', 'walkthrough');
const walkthrough = readFileSync(join(projectRoot, 'docs', 'walkthrough.md'), 'utf8');
const examplesReadme = readFileSync(join(dir, 'README.md'), 'utf8');

interface Step {
  n: number;
  file: string;
  namespaces: Set<string>;
  /** Node labels the step's stores select, as `key=value`; the well-known kubernetes.io ones aside. */
  labels: Set<string>;
  placeholder: boolean;
}

type Manifest = {
  metadata?: { namespace?: string };
  spec?: { connection?: { managed?: { members?: { nodeSelector?: Record<string, string> }[] } } };
};

const steps: Step[] = readdirSync(dir)
  .filter((f) => /^step-\d+-.*\.yaml$/.test(f))
  .map((file) => {
    const text = readFileSync(join(dir, file), 'utf8');
    const objects = parseAllDocuments(text).map((d) => (d.toJSON() ?? {}) as Manifest);
    const selectors = objects.flatMap((o) => o.spec?.connection?.managed?.members ?? []);
    return {
      n: Number(/^step-(\d+)/.exec(file)![1]),
      file,
      namespaces: new Set(objects.map((o) => o.metadata?.namespace).filter((ns): ns is string => !!ns)),
      labels: new Set(
        selectors
          .flatMap((m) => Object.entries(m.nodeSelector ?? {}))
          .filter(([k]) => !k.startsWith('kubernetes.io/'))
          .map(([k, v]) => `${k}=${v}`),
      ),
      placeholder: text.includes('INSTANCE_TYPE'),
    };
  })
  .sort((a, b) => a.n - b.n);

/** Step n's section, its console blocks, and the console blocks of the page up to the end of Step n. */
function docsThrough(n: number): {
  section: string;
  commandsBefore: string;
  commands: string;
} {
  const start = walkthrough.indexOf(`## Step ${n}:`);
  const next = walkthrough.indexOf(`## Step ${n + 1}:`);
  assert.ok(start >= 0, `docs/walkthrough.md has no "## Step ${n}:"`);
  const end = next < 0 ? walkthrough.length : next;
  const section = walkthrough.slice(start, end);
  const consoleText = (md: string) => fencedBlocks(md, 'console').join('\n');
  return { section, commandsBefore: consoleText(walkthrough.slice(0, end)), commands: consoleText(section) };
}

describe('the walkthrough docs', () => {
  it('cover the six steps', () =>
    assert.deepEqual(
      steps.map((s) => s.n),
      [1, 2, 3, 4, 5, 6],
    ));

  it('are console blocks the e2e test can run: scripts, or transcripts without a watch', () => {
    for (const block of fencedBlocks(walkthrough, 'console')) assert.doesNotThrow(() => consoleSteps(block));
  });

  for (const step of steps) {
    it(`prepare what ${step.file} needs before it is applied`, () => {
      const { section, commandsBefore, commands } = docsThrough(step.n);
      const apply = step.placeholder
        ? `sed s/INSTANCE_TYPE/local-gpu/ examples/walkthrough/${step.file} | kubectl apply --server-side -f -`
        : `kubectl apply --server-side -f examples/walkthrough/${step.file}`;
      assert.ok(
        commands.includes(apply),
        `walkthrough: Step ${step.n} has no console block with \`${apply}\``,
      );
      for (const ns of step.namespaces) {
        assert.ok(
          commandsBefore.includes(`kubectl create namespace ${ns}`),
          `walkthrough: no console block creates namespace ${ns}`,
        );
        assert.ok(examplesReadme.includes(`create namespace ${ns}`), `examples README: namespace ${ns}`);
      }
      for (const label of step.labels) {
        assert.match(
          commandsBefore,
          new RegExp(`kubectl label node .*${label}`),
          `walkthrough: no console block labels a node ${label}`,
        );
        assert.match(examplesReadme, new RegExp(`label node .*${label}`), `examples README: ${label}`);
      }
      if (step.placeholder) {
        assert.match(section, /INSTANCE_TYPE/, `walkthrough: Step ${step.n} does not say to replace it`);
        const row = examplesReadme.split('\n').find((l) => l.includes(`\`${step.file}\``));
        assert.match(row ?? '', /INSTANCE_TYPE/, `examples README: ${step.file} has INSTANCE_TYPE`);
        assert.ok(examplesReadme.includes(`INSTANCE_TYPE/local-gpu/ examples/walkthrough/${step.file}`));
      }
    });
  }
});
