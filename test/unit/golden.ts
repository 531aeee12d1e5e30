// Golden files: a render is compared byte for byte with the recorded one; UPDATE_GOLDEN=1 records it.
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { it } from 'node:test';

/** The recorded form: indented JSON with a final newline. */
function goldenBytes(value: unknown): string {
  return `${JSON.stringify(value, null, 2)}\n`;
}

/** One test per case comparing render(case) with `<dir>/<name>.json`, plus one that renders twice. */
export function goldenTests<T>(dir: URL, cases: Record<string, T>, render: (c: T) => unknown): void {
  for (const [name, c] of Object.entries(cases)) {
    it(`renders ${name} exactly as recorded`, () => {
      const file = new URL(`${name}.json`, dir);
      const rendered = goldenBytes(render(c));
      if (process.env.UPDATE_GOLDEN === '1') {
        mkdirSync(dir, { recursive: true });
        writeFileSync(file, rendered);
        return;
      }
      assert.equal(rendered, readFileSync(file, 'utf8'), `${name}: rerun with UPDATE_GOLDEN=1 if intended`);
    });
  }

  it('renders the same bytes twice', () => {
    for (const c of Object.values(cases)) assert.equal(goldenBytes(render(c)), goldenBytes(render(c)));
  });
}

/** Like goldenTests, for renders that are text people read: compared with `<dir>/<name>.txt`. */
export function goldenTextTests<T>(dir: URL, cases: Record<string, T>, render: (c: T) => string): void {
  for (const [name, c] of Object.entries(cases)) {
    it(`prints ${name} exactly as recorded`, () => {
      const file = new URL(`${name}.txt`, dir);
      const rendered = render(c);
      if (process.env.UPDATE_GOLDEN === '1') {
        mkdirSync(dir, { recursive: true });
        writeFileSync(file, rendered);
        return;
      }
      assert.equal(rendered, readFileSync(file, 'utf8'), `${name}: rerun with UPDATE_GOLDEN=1 if intended`);
    });
  }
}
