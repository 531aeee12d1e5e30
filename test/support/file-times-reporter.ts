// A second reporter for the suite (run-tests adds it beside the spec reporter): at the end, each test
// file's wall time (from its dequeue to its last completed test: its process start and imports
// included), slowest first, so the files that make the suite long are named without reading
// the whole log.
interface TestEvent {
  type: string;
  data?: { file?: string };
}

export default async function* fileTimes(source: AsyncIterable<TestEvent>): AsyncGenerator<string> {
  const spans = new Map<string, { first: number; last: number }>();
  for await (const event of source) {
    const file = event.data?.file;
    // The runner relays these two as they happen (the others when the file is done): a file starts at
    // its dequeue and ends at its last completed test.
    if (!file || (event.type !== 'test:dequeue' && event.type !== 'test:complete')) continue;
    const now = performance.now();
    const span = spans.get(file);
    if (span) span.last = now;
    else spans.set(file, { first: now, last: now });
  }
  const rows = [...spans]
    .map(([file, s]) => [file, (s.last - s.first) / 1000] as const)
    .sort((a, b) => b[1] - a[1]);
  const cwd = `${process.cwd()}/`;
  yield `\nseconds per test file, slowest first (${rows.length} files):\n`;
  for (const [file, s] of rows) yield `${s.toFixed(1).padStart(8)}  ${file.replace(cwd, '')}\n`;
}
