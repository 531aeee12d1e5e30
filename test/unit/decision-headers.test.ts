// Every decision under docs/decisions opens, right under its title, with one header block in one exact
// form, so a reader sees at once whether it still holds, when it was written and what it decided:
//
//   - Status: accepted | superseded by [N](NNNN-name.md)[, …] — either may end "; amended by [N](…)[, …]"
//   - Date: YYYY-MM-DD              (first committed)
//   - Last revised: YYYY-MM-DD      (only when edited after; not before Date)
//   - Summary: one line
//   - What changed: one line        (exactly when Status names a later decision)
//
// A decision named in a Status is a later one whose file exists, and no two decisions share a number.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { projectRoot } from '../../images/toolchain.ts';

const dir = join(projectRoot, 'docs', 'decisions');
const files = readdirSync(dir).filter((f) => f.endsWith('.md'));

const numberOf = (file: string) => Number(file.slice(0, 4));
const ref = String.raw`\[(\d+)\]\((\d{4}-[a-z0-9-]+\.md)\)`;
const refs = `${ref}(?:, ${ref})*`;
const statusForm = new RegExp(`^(accepted|superseded by (${refs}))(?:; amended by (${refs}))?$`);

/** Numbers that more than one file carries. */
function sharedNumbers(names: readonly string[]): number[] {
  const numbers = names.map(numberOf);
  return [...new Set(numbers.filter((n, i) => numbers.indexOf(n) !== i))];
}

/** Whether `text` is a real calendar day written YYYY-MM-DD. */
function isDay(text: string | undefined): boolean {
  return (
    text !== undefined &&
    /^\d{4}-\d{2}-\d{2}$/.test(text) &&
    new Date(`${text}T00:00:00Z`).toISOString().slice(0, 10) === text
  );
}

/** The decisions a Status names, as [number, file] pairs; undefined when it is not of the allowed form. */
function namedDecisions(status: string): [number, string][] | undefined {
  if (!statusForm.test(status)) return undefined;
  return [...status.matchAll(new RegExp(ref, 'g'))].map((m) => [Number(m[1]), m[2]!]);
}

/** The `- Key: value` lines between the title's blank line and the next blank line, in order. */
function headerFields(text: string): [string, string][] | string {
  const lines = text.split('\n');
  if (lines[1] !== '') return 'the title is not followed by a blank line';
  const fields: [string, string][] = [];
  for (const line of lines.slice(2)) {
    if (line === '') break;
    const m = /^- ([A-Z][a-z ]+): (\S.*)$/.exec(line);
    if (!m) return `not a header line: ${JSON.stringify(line)}`;
    fields.push([m[1]!, m[2]!.trim()]);
  }
  return fields;
}

/** What is wrong with one decision's header, given the files beside it; empty when nothing is. */
function headerProblems(file: string, text: string, existing: readonly string[]): string[] {
  const own = numberOf(file);
  if (!/^\d{4}-[a-z0-9-]+\.md$/.test(file)) return ['the name is not NNNN-words.md'];
  if (!text.startsWith(`# ${own}. `)) return [`the title does not start with "# ${own}. "`];
  const fields = headerFields(text);
  if (typeof fields === 'string') return [fields];
  const value = new Map(fields);
  const problems: string[] = [];
  const order = fields.map(([key]) => key);
  const expected = ['Status', 'Date', 'Last revised', 'Summary', 'What changed'].filter((k) => value.has(k));
  if (order.join('|') !== expected.join('|') || value.size !== order.length)
    problems.push(`header lines ${order.join(', ')}: expected ${expected.join(', ')}, each once`);
  const status = value.get('Status');
  const named = status === undefined ? undefined : namedDecisions(status);
  if (status === undefined) problems.push('no Status');
  else if (!named) problems.push(`Status "${status}" is not of an allowed form`);
  for (const [n, target] of named ?? []) {
    if (!existing.includes(target)) problems.push(`Status names ${target}, which does not exist`);
    else if (numberOf(target) !== n) problems.push(`Status links [${n}] to ${target}`);
    if (n <= own) problems.push(`Status names decision ${n}, which is not a later one`);
  }
  if (named?.length && !value.get('What changed'))
    problems.push('Status names a later decision but no "What changed" line says what');
  if (named?.length === 0 && value.has('What changed'))
    problems.push('"What changed" on an accepted decision');
  const date = value.get('Date');
  if (!isDay(date)) problems.push(`Date "${date ?? ''}" is not a YYYY-MM-DD day`);
  const revised = value.get('Last revised');
  if (revised !== undefined && !isDay(revised))
    problems.push(`Last revised "${revised}" is not a YYYY-MM-DD day`);
  else if (revised !== undefined && date !== undefined && revised <= date)
    problems.push(`Last revised ${revised} is not after Date ${date}`);
  if ((value.get('Summary') ?? '').length < 20) problems.push('no Summary of at least a sentence');
  return problems;
}

describe('decision headers', () => {
  it('give every decision a header: status, dates, summary, and what changed when a later one did', () => {
    const wrong = files.flatMap((f) =>
      headerProblems(f, readFileSync(join(dir, f), 'utf8'), files).map((p) => `${f}: ${p}`),
    );
    assert.deepEqual(wrong, []);
  });

  it('number each decision once', () => {
    assert.ok(files.length >= 48, `${files.length} decisions`);
    assert.deepEqual(sharedNumbers(files), [], 'two decisions share a number');
  });

  it('refuse a header that is missing, malformed or names a decision that does not exist', () => {
    const names = ['0001-one.md', '0002-two.md', '0003-three.md'];
    const body = (header: string) => `# 1. One\n\n${header}\n\nText.\n`;
    const good =
      '- Status: accepted\n- Date: 2026-11-29\n- Summary: One thing is decided here, for a reason.';
    assert.deepEqual(headerProblems('0001-one.md', body(good), names), []);
    const superseded = good.replace('accepted', 'superseded by [3](0003-three.md)');
    assert.deepEqual(
      headerProblems('0001-one.md', body(`${superseded}\n- What changed: 3 decides it another way.`), names),
      [],
    );
    const cases: [string, RegExp][] = [
      ['# 1. One\n\nText.\n', /not a header line/],
      [body(good.replace('accepted', 'Accepted')), /not of an allowed form/],
      [body(good.replace('accepted', 'superseded by [4](0004-four.md)')), /does not exist/],
      [body(good.replace('accepted', 'superseded by [3](0003-three.md)')), /no "What changed"/],
      [body(good.replace('2026-11-29', '2026-02-30')), /not a YYYY-MM-DD day/],
      [body(good.replace(/\n- Summary.*/, '')), /no Summary/],
      [body(`${good}\n- Last revised: 2026-11-28`), /expected Status, Date, Last revised, Summary/],
    ];
    for (const [text, problem] of cases)
      assert.match(headerProblems('0001-one.md', text, names).join('; '), problem, text);
    assert.deepEqual(sharedNumbers(['0001-a.md', '0002-b.md', '0002-c.md']), [2]);
  });
});
