// Whether what a command printed is what a doc says it prints. Drift fails: column headers, names,
// phases, endpoints, capacities, grants, condition reasons, the lines of `kubectl kvpool status` with
// their indentation, tree and words. What legitimately varies from one run (or cluster) to the next
// passes: the AGE column, the generated suffixes of Pod names, IPv4 addresses, usage figures other
// than 0 (and the usage part of a grant bar), table padding, and whatever the doc writes as `…`.

/** Kubernetes' generated-name alphabet (no vowels, no 0, 1, 3): ReplicaSet hashes and Pod suffixes. */
const safe = '[bcdfghjklmnpqrstvwxz2456789]';
const generatedSuffix = new RegExp(`(?<=[a-z0-9])(-${safe}{6,10})?-${safe}{5}(?![\\w-])`, 'g');
const ipv4 = /(?<![\d.])\d{1,3}(\.\d{1,3}){3}(?![\d.])/g;
const age = /^(\d+[smhdy])+$/;
const quantity = /^\d+(\.\d+)?([KMGTPE]i?)?$/;
const bar = /\[(█*)(▒*)(░*)\]/g;

/** A usage figure: 0 stays 0 (nothing written is known), any other amount is what prompts left. */
function usage(figure: string): string {
  return figure !== '0' && quantity.test(figure) ? '<usage>' : figure;
}

/** The parts of any line that vary between runs, replaced by what they stand for. */
function normaliseText(line: string): string {
  return line
    .replace(ipv4, '<ip>')
    .replace(generatedSuffix, (_, hash: string | undefined) => `${hash ? '-<hash>' : ''}-<suffix>`)
    .replace(/\busage (\S+)/g, (_, f: string) => `usage ${usage(f)}`)
    .replace(/\((\S+) used\)/g, (_, f: string) => `(${usage(f)} used)`)
    .replace(
      bar,
      (_, used: string, granted: string, refused: string) =>
        `[${used.length + granted.length} granted, ${used ? 'some' : 'none'} used, ${refused.length} not granted]`,
    );
}

/** A kubectl table's header: at least two upper-case column names. */
function isHeader(line: string): boolean {
  const cells = line.trim().split(/\s+/);
  return cells.length >= 2 && cells.every((c) => /^[A-Z][A-Z0-9()/_-]*$/.test(c));
}

/**
 * Every line of an output, normalised: a table row's cells by their column (AGE, USAGE), joined by
 * one space, since kubectl pads columns to their widest cell; any other line keeps its spacing,
 * which is the shape of a tree.
 */
function normalise(output: string): string[] {
  const lines = output.replace(/\s+$/, '').split('\n');
  let columns: string[] | undefined;
  return lines.map((raw) => {
    const line = raw.replace(/\s+$/, '');
    if (line === '') columns = undefined;
    else if (isHeader(line)) {
      columns = line.trim().split(/\s+/);
      return columns.join(' ');
    } else if (columns) {
      const cells = line.trim().split(/\s+/);
      return cells
        .map((cell, i) => {
          if (columns?.[i] === 'AGE' && age.test(cell)) return '<age>';
          if (columns?.[i] === 'USAGE') return usage(cell);
          return normaliseText(cell);
        })
        .join(' ');
    }
    return normaliseText(line);
  });
}

/** Whether one normalised line of the doc admits one normalised line printed; `…` stands for anything. */
function admits(expected: string, actual: string): boolean {
  if (!expected.includes('…')) return expected === actual;
  const pattern = expected
    .split('…')
    .map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
    .join('.*');
  return new RegExp(`^${pattern}$`, 's').test(actual);
}

/**
 * Undefined when `actual` is what the doc's `expected` output says, else where they part: the first
 * line that differs, as written and as printed.
 */
export function outputDifference(expected: string, actual: string): string | undefined {
  const want = normalise(expected);
  const got = normalise(actual);
  const rawWant = expected.replace(/\s+$/, '').split('\n');
  const rawGot = actual.replace(/\s+$/, '').split('\n');
  for (let i = 0; i < Math.max(want.length, got.length); i++) {
    if (i < want.length && i < got.length && admits(want[i]!, got[i]!)) continue;
    const doc = i < want.length ? rawWant[i] : '(no such line)';
    const printed = i < got.length ? rawGot[i] : '(no such line)';
    return `line ${i + 1} of ${want.length}: the doc has\n  ${doc}\nthe command printed\n  ${printed}`;
  }
  return undefined;
}
