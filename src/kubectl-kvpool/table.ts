// Columns as kubectl prints them: upper-case headers, left-aligned, three spaces apart.
export function renderTable(headers: string[], rows: string[][]): string[] {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => [...(r[i] ?? '')].length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c + ' '.repeat(widths[i]! - [...c].length + 3)))
      .join('')
      .trimEnd();
  return [line(headers), ...rows.map(line)];
}
